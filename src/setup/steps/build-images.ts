import type { SetupStep, StepContext, StepOutcome } from '../step.js';

/** Builds what is missing, as `intercode images build` does, saying first what and about how long; returns the tags and whether anything was built. The CLI passes its own image builder in. */
export type ImageBuilder = (endpoint: string, log: (line: string) => void) => Promise<{ tags: string[]; built: boolean }>;

/** The images step: every env image `images build` makes, on the engine set-up found or started. */
export function buildImagesStep(build: ImageBuilder, names: readonly string[] = []): SetupStep {
  return {
    id: 'build-images',
    title: `build the sandbox images${names.length > 0 ? ` of ${names.join(', ')}` : ''} (base image pulled, or bootstrapped offline)`,
    async run({ facts, layout, log }: StepContext): Promise<StepOutcome> {
      const endpoint = facts.engine.answers ? facts.endpoint : `unix://${layout.socket}`;
      const began = Date.now();
      const { tags, built } = await build(endpoint, log);
      if (!built) return { status: 'skipped', detail: `already built: ${tags.join(', ')}` };
      return { status: 'done', detail: `built in ${((Date.now() - began) / 1000).toFixed(1)} s: ${tags.join(', ')}` };
    },
  };
}
