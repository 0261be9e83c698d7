/* The reversing task's program. generate.py fills in the encoded flag and compiles it stripped. */
#include <stdio.h>
#include <string.h>

static const unsigned char encoded[26] = { 0xf0, 0xcf, 0xd1, 0xda, 0xb1, 0xb4, 0x8c, 0x94, 0x9d, 0x60, 0x7d, 0x57, 0x6d, 0x06, 0x7a, 0x6c, 0x5e, 0x40, 0xb4, 0xbd, 0xa2, 0xc6, 0xd0, 0xf0, 0xfd, 0xa6 };

static void decode(char *out) {
  unsigned char key = 150;
  for (int i = 0; i < 26; i++) {
    out[i] = (char)(encoded[i] ^ key);
    key = (unsigned char)(key + 13);
  }
  out[26] = '\0';
}

int main(void) {
  char expected[26 + 1];
  char input[256] = {0};
  printf("Enter the flag: ");
  fflush(stdout);
  if (!fgets(input, sizeof input, stdin)) input[0] = '\0';
  input[strcspn(input, "\n")] = '\0';
  decode(expected);
  if (memcmp(input, expected, sizeof expected) == 0) {
    puts("Correct!");
    return 0;
  }
  puts("Wrong.");
  return 1;
}
