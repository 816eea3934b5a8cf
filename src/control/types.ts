// The control API's request and response types, taken from the zod schemas that validate them.
// Type-only imports: the compiled client loads neither zod nor the emulator.
import type { z } from 'zod';
import type * as S from '../emulator/control/schemas.js';

/** What a request may send (before zod's defaults): the schemas' input types. */
export type VmBody = z.input<typeof S.VmBody>;
export type OperationBody = z.input<typeof S.OperationBody>;
export type FaultBody = z.input<typeof S.FaultBody>;
export type ScenarioBody = z.input<typeof S.ScenarioBody>;
export type ProcessBody = z.input<typeof S.ProcessBody>;

/** What the API answers: the schemas' output types. */
export type Vm = z.output<typeof S.VmResponse>;
export type Fleet = z.output<typeof S.FleetResponse>;
export type OperationCreated = z.output<typeof S.OperationCreated>;
export type Operation = z.output<typeof S.OperationResponse>;
export type OperationList = z.output<typeof S.OperationList>;
export type Event = z.output<typeof S.EventResponse>;
export type EndedEvent = z.output<typeof S.EndedEventResponse>;
export type History = z.output<typeof S.History>;
export type Document = z.output<typeof S.DocumentResponse>;
export type Clock = z.output<typeof S.ClockResponse>;
export type Fault = z.output<typeof S.FaultResponse>;
export type ScenarioRun = z.output<typeof S.ScenarioRun>;
export type ScenarioList = z.output<typeof S.ScenarioList>;
export type ProcessBinding = z.output<typeof S.ProcessResponse>;
export type ImpactEntry = z.output<typeof S.ImpactEntryResponse>;

/** A page of GET /v1/operations or GET /v1/history. */
export interface PageQuery {
  /** 1 to the API's maximum; its default when absent. */
  limit?: number;
  /** The `next` of the previous page. */
  before?: string;
}

export type OperationStatus = Operation['status'];
