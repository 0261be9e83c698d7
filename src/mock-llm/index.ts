/** The recorded model: an OpenAI-compatible endpoint that replays a recorded InterCode run. */
export { RecordedModel, type RecordedAnswer, type RecordedStyle } from './recorded-model.js';
export { startMockServer, type MockServer, type MockServerOptions, type MockServerStats } from './server.js';
