"use strict";
// Jest: "globalSetup": "kafkalite/jest-global-setup" starts one broker for the run and publishes
// KAFKA_BOOTSTRAP and KAFKALITE_CONTROLS_URL to the test workers (which start after it); the
// broker's options come from the KAFKALITE_OPTIONS variable (JSON, as startKafkalite takes them).
const { startKafkalite, BOOTSTRAP_ENV, CONTROLS_URL_ENV } = require("./index.js");

module.exports = async function globalSetup() {
  const options = process.env.KAFKALITE_OPTIONS ? JSON.parse(process.env.KAFKALITE_OPTIONS) : {};
  const broker = await startKafkalite(options);
  globalThis.__KAFKALITE_BROKER__ = broker;
  process.env[BOOTSTRAP_ENV] = broker.bootstrap;
  process.env[CONTROLS_URL_ENV] = broker.controlsUrl;
};
