export * from './types.js';
export * from './errors.js';
export * from './versions.js';
export * from './time.js';
export * from './render.js';
export * from './approval.js';
export * from './etag.js';
export * from './instance-metadata.js';
