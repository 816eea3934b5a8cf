// The catalogue of maintenance operations: their names and which run as jobs on a host.
// What each one does lives in its policy, `policies/<name>.ts`.

// The names are the control API's contract, so the dashboard and the CLI share the one list.
export { HOST_OPERATIONS, OPERATION_TYPES, isOperationType, type OperationType } from '../../protocol/control.js';
