const assert = require('assert');
const { route } = require('../src/web/routes');

assert.strictEqual(typeof route('GET', '/api/stations'), 'function');
assert.strictEqual(route('DELETE', '/api/stations'), undefined);
console.log('routes ok');
