"use strict";
// Jest: "globalTeardown": "kafkalite/jest-global-teardown" stops the broker of jest-global-setup.
module.exports = async function globalTeardown() {
  const broker = globalThis.__KAFKALITE_BROKER__;
  delete globalThis.__KAFKALITE_BROKER__;
  if (broker) await broker.stop();
};
