// Limits of the emulator's HTTP surfaces that more than one module states: declared once, with their wording.

const MIB = 1024 * 1024;

/** [choice] The most a control API request body may hold: room for a scenario with a large fleet; more gets 413. */
export const BODY_LIMIT_BYTES = 1 * MIB;

/** BODY_LIMIT_BYTES as messages and the OpenAPI document say it. */
export const BODY_LIMIT_TEXT = `${BODY_LIMIT_BYTES / MIB} MiB`;
