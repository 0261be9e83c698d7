/** What a failed build's clean-up takes from the engine's build output, without Docker. */
import { describe, expect, it } from 'vitest';
import { stepImageIds } from '../../src/images/image-builder.js';

describe('stepImageIds', () => {
  it("takes each step's result, cached or built, and nothing a RUN step printed", () => {
    const output = [
      'Step 1/4 : FROM intercode-ts/sql-server:abc',
      ' ---> 111111111111',
      'Step 2/4 : COPY dumps /dumps',
      ' ---> Using cache',
      ' ---> 222222222222',
      'Step 3/4 : COPY load.sh /',
      ' ---> 333333333333',
      'Step 4/4 : RUN /load.sh',
      ' ---> Running in 444444444444',
      'loading dump 1',
      ' ---> 999999999999',
      'Removing intermediate container 444444444444',
    ];
    expect(stepImageIds(output)).toEqual(['111111111111', '222222222222', '333333333333']);
    expect(stepImageIds([...output, ' ---> 555555555555'])).toEqual(['111111111111', '222222222222', '333333333333', '555555555555']);
  });
});
