'use strict';

const http = require('http');
const { route } = require('./routes');

const PORT = Number(process.env.APP_PORT || 8080);
const HOST = process.env.APP_HOST || 'localhost';

const server = http.createServer((req, res) => {
  const handler = route(req.method, req.url);
  if (!handler) {
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ error: 'not found' }));
    return;
  }
  handler(req, res);
});

server.listen(PORT, HOST, () => {
  console.log(`skylark api listening on http://${HOST}:${PORT}`);
});
