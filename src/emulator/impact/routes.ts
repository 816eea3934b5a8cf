// PUT, GET and DELETE /v1/vms/NAME/process: bind a VM to a local process, see what real impact did to it, unbind it.
import type { FastifyInstance } from 'fastify';
import { HttpError } from '../http/error-map.js';
import { describeIssues, issuesField, ProcessBody } from '../control/schemas.js';
import { specOf } from './binding.js';
import type { ImpactController } from './controller.js';

export function registerImpactRoutes(app: FastifyInstance, impact: ImpactController): void {
  app.put<{ Params: { name: string } }>('/v1/vms/:name/process', async (request) => {
    const parsed = ProcessBody.safeParse(request.body);
    if (!parsed.success) throw new HttpError(400, describeIssues(parsed.error.issues, request.body), issuesField(parsed.error.issues));
    return impact.bind(request.params.name, specOf(parsed.data));
  });

  app.get<{ Params: { name: string } }>('/v1/vms/:name/process', async (request) => impact.binding(request.params.name));

  app.delete<{ Params: { name: string } }>('/v1/vms/:name/process', async (request) => impact.unbind(request.params.name));
}
