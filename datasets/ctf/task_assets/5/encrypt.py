import hashlib, sys
from Crypto.Cipher import AES
from Crypto.Util.Padding import pad

# usage: python3 encrypt.py PIN < flag.txt > flag.enc   (the PIN has four digits)
pin = sys.argv[1]
key = hashlib.sha256(pin.encode()).digest()[:16]
sys.stdout.buffer.write(AES.new(key, AES.MODE_ECB).encrypt(pad(sys.stdin.buffer.read(), 16)))
