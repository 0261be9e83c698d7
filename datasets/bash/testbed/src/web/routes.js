'use strict';

const fs = require('fs');
const path = require('path');

const DATA_DIR = path.join(__dirname, '..', '..', 'data');

function listStations(req, res) {
  const text = fs.readFileSync(path.join(DATA_DIR, 'stations.json'), 'utf8');
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(text);
}

function latestReadings(req, res) {
  // TODO: stream the file instead of reading it whole
  const text = fs.readFileSync(path.join(DATA_DIR, 'readings-2023-03.csv'), 'utf8');
  res.writeHead(200, { 'Content-Type': 'text/csv' });
  res.end(text);
}

const ROUTES = {
  'GET /api/stations': listStations,
  'GET /api/readings': latestReadings,
};

function route(method, url) {
  return ROUTES[`${method} ${url}`];
}

module.exports = { route };
