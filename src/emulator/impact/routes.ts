// PUT, GET and DELETE /v1/vms/NAME/process: bind a VM to a local process, see what real impact did to it, unbind it.
import type { FastifyInstance } from 'fastify';
import { HttpError } from '../http/error-map.js';
import { describeIssues, issuesField, ProcessBody } from '../control/schemas.js';
import { specOf } from './binding.js';
import { IMPACT_OFF_MESSAGE, type ImpactController } from './controller.js';

const PROCESS_ROUTE = '/v1/vms/:name/process';

export function registerImpactRoutes(app: FastifyInstance, impact: ImpactController): void {
  // Off, the routes refuse before anything is read: no file opened, no pid looked at, no command started.
  app.addHook('onRequest', async (request) => {
    if (!impact.enabled && request.routeOptions.url === PROCESS_ROUTE) throw new HttpError(403, IMPACT_OFF_MESSAGE);
  });
  app.put<{ Params: { name: string } }>(PROCESS_ROUTE, async (request) => {
    const parsed = ProcessBody.safeParse(request.body);
    if (!parsed.success) throw new HttpError(400, describeIssues(parsed.error.issues, request.body), issuesField(parsed.error.issues));
    return impact.bind(request.params.name, specOf(parsed.data));
  });

  app.get<{ Params: { name: string } }>(PROCESS_ROUTE, async (request) => impact.binding(request.params.name));

  app.delete<{ Params: { name: string } }>(PROCESS_ROUTE, async (request) => impact.unbind(request.params.name));
}
