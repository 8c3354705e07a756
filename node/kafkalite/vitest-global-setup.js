"use strict";
// Vitest: test.globalSetup: ["kafkalite/vitest-global-setup"] starts one broker for the run,
// publishes KAFKA_BOOTSTRAP and KAFKALITE_CONTROLS_URL to the test workers, and stops it after.
const setup = require("./jest-global-setup.js");
const teardown = require("./jest-global-teardown.js");

module.exports = { setup, teardown };
