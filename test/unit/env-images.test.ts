/**
 * Every env's image is known to `images build`, `setup` and `doctor` through its descriptor
 * (EnvPlugin.images), and a first build says what it builds and about how long: before,
 * only bash and python gave a recipe, so `run ctf` spent minutes building an image no
 * command had named, with no word of how long.
 */
import { describe, expect, it } from 'vitest';
import { ENV_PLUGINS } from '../../envs/index.js';
import { chooseImages, envImages, perTaskImages } from '../../src/cli/images-command.js';
import { ConfigError } from '../../src/errors.js';
import { describeBuild } from '../../src/images/image-builder.js';
import type { BaseImage } from '../../src/images/base-images.js';
import { DEBIAN_BOOKWORM } from '../../src/images/base-images.js';
import type { ImageRecipe } from '../../src/images/recipe.js';

/** The build times a recipe's chain declares, base first (undefined where one is missing). */
function chainSeconds(recipe: ImageRecipe): (number | undefined)[] {
  const seconds: (number | undefined)[] = [];
  let link: ImageRecipe | BaseImage | 'base' = recipe;
  while (typeof link !== 'string' && !('suite' in link)) {
    seconds.unshift(link.typicalBuildSeconds);
    link = link.parent;
  }
  seconds.unshift((link === 'base' ? DEBIAN_BOOKWORM : link).typicalBuildSeconds);
  return seconds;
}

describe('env images', () => {
  it('every env declares its images, or says it makes them per task', () => {
    for (const plugin of ENV_PLUGINS) {
      const images = plugin.images.list({});
      expect(images.length > 0 || plugin.images.perTask !== undefined, plugin.name).toBe(true);
      if (images.length > 0) expect(images.filter((i) => i.byDefault).map((i) => i.name), plugin.name).toContain(plugin.name);
    }
    const names = envImages().map((i) => i.name);
    expect(new Set(names).size).toBe(names.length);
    expect(chooseImages([], false, '--env').map((i) => i.name)).toEqual(['bash', 'sql', 'python', 'ctf', 'jq']);
    expect(perTaskImages()).toEqual([expect.stringMatching(/^task: one per Harbor task directory/)]);
  });

  it('every default image and its parents have a measured build time, so a first build says how long', async () => {
    for (const image of chooseImages([], false, '--env')) {
      const seconds = chainSeconds(await image.recipe());
      expect(seconds.every((s) => typeof s === 'number' && s > 0), `${image.name}: ${JSON.stringify(seconds)}`).toBe(true);
    }
  });

  it('images build picks by env (default images, or all with --all) or by image name', () => {
    expect(chooseImages(['bash'], false, '--env').map((i) => i.name)).toEqual(['bash']);
    expect(chooseImages(['bash'], true, '--env').map((i) => i.name)).toEqual(['bash', 'bash:ubuntu-jammy']);
    expect(chooseImages(['bash:ubuntu-jammy', 'ctf', 'ctf'], false, '--env').map((i) => i.name)).toEqual(['bash:ubuntu-jammy', 'ctf']);
    expect(chooseImages([], true, '--env').map((i) => i.name)).toContain('bash:ubuntu-jammy');
    expect(() => chooseImages(['nope'], false, '--env')).toThrow(new ConfigError('--env', 'names no env or image "nope"; known: bash, bash:ubuntu-jammy, sql, python, ctf, jq'));
    expect(() => chooseImages(['task'], false, '--env')).toThrow(/names env "task", whose images are made per task/);
  });

  it('the first-build line names each image and the total', () => {
    expect(
      describeBuild([
        { image: 'intercode-ts/base:bookworm-slim', kind: 'bootstrap', typicalSeconds: 30 },
        { image: 'intercode-ts/ctf', kind: 'build', typicalSeconds: 150 },
      ]),
    ).toBe(
      'first use: building intercode-ts/base:bookworm-slim (pulled, or bootstrapped offline: about 30 s), then intercode-ts/ctf (about 2.5 min) — about 3.0 min on a 2-core machine, once; later runs reuse them',
    );
    expect(describeBuild([{ image: 'intercode-ts/base:jammy', kind: 'bootstrap' }, { image: 'intercode-ts/bash', kind: 'build', typicalSeconds: 25 }])).toBe(
      'first use: building intercode-ts/base:jammy (pulled, or bootstrapped offline: time not measured), then intercode-ts/bash (about 25 s) — more than 25 s on a 2-core machine, once; later runs reuse them',
    );
  });
});
