import { createHash } from 'node:crypto';
import type { BaseImage } from './base-images.js';

/**
 * What an image is built from. Its tag is a hash of every input (the parent image's id,
 * the Dockerfile, the context files), so an image is rebuilt exactly when an input changes.
 */
export interface ImageRecipe {
  /** Repository part of the tag, e.g. `intercode-ts/bash`. */
  repository: string;
  dockerfile: string;
  /** Extra files of the build context, by path. */
  files: Readonly<Record<string, Buffer>>;
  /**
   * Built first; its name is passed to the Dockerfile as build arg BASE. `'base'` is the
   * default base image (Debian bookworm); a {@link BaseImage} names another.
   */
  parent: ImageRecipe | BaseImage | 'base';
  /** The longest the build may take (not part of the tag): past it the build is cancelled (a Harbor task's `build_timeout_sec`). */
  buildTimeoutMs?: number;
  /**
   * About how long building it takes on the project's 2-core machine (docs/setup.md#images),
   * said before a first build; not part of the tag. Absent: not measured.
   */
  typicalBuildSeconds?: number;
}

/** Bumped when how images are built changes (labels, build options), so old tags are not reused. */
const RECIPE_FORMAT = 2;

export function recipeTag(recipe: ImageRecipe, parentId: string): string {
  const hash = createHash('sha256');
  hash.update(`format ${RECIPE_FORMAT}\0`).update(parentId).update('\0').update(recipe.dockerfile).update('\0');
  for (const name of Object.keys(recipe.files).sort()) {
    hash.update(name).update('\0').update(recipe.files[name]!).update('\0');
  }
  return `${recipe.repository}:${hash.digest('hex').slice(0, 16)}`;
}
