/**
 * The worker side of the vec bench's transfer comparison: answers each request with a
 * typical step answer (see {@link sampleStepAnswer}), as a structured clone or packed with
 * msgpackr into a transferred buffer, as the request asks.
 */
import { parentPort } from 'node:worker_threads';
import { Packr } from 'msgpackr';
import { sampleStepAnswer } from './transfer-sample.js';

const packr = new Packr({ structuredClone: false });

parentPort?.on('message', (request: { id: number; how: 'clone' | 'msgpackr'; packed?: Uint8Array }) => {
  if (request.how === 'msgpackr') {
    const { id } = packr.unpack(request.packed!) as { id: number };
    const bytes = packr.pack(sampleStepAnswer(id));
    const copy = new Uint8Array(bytes); // its own buffer, so it can be transferred
    parentPort!.postMessage({ packed: copy }, [copy.buffer]);
    return;
  }
  parentPort!.postMessage(sampleStepAnswer(request.id));
});
