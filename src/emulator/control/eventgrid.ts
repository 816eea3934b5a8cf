// The Event Grid routes: subscribe a webhook (after its validation handshake), list, read and delete
// subscriptions, and read what a subscription dead-lettered.
import type { FastifyInstance } from 'fastify';
import { HttpError } from '../http/error-map.js';
import type { EventGrid } from '../eventgrid/event-grid.js';
import { describeIssues, EventGridSubscriptionBody, issuesField } from './schemas.js';

type ById = { Params: { id: string } };

function unknown(id: string): HttpError {
  return new HttpError(404, `no Event Grid subscription ${JSON.stringify(id)}`);
}

export function registerEventGridRoutes(app: FastifyInstance, eventGrid: EventGrid): void {
  app.post('/v1/eventgrid/subscriptions', async (request, reply) => {
    const parsed = EventGridSubscriptionBody.safeParse(request.body);
    if (!parsed.success) throw new HttpError(400, describeIssues(parsed.error.issues, request.body), issuesField(parsed.error.issues));
    const result = await eventGrid.subscribe(parsed.data);
    if (!result.ok) throw new HttpError(400, `endpoint: the validation handshake failed: ${result.reason}`, 'endpoint');
    return reply.code(201).send({ subscription: result.subscription });
  });

  app.get('/v1/eventgrid/subscriptions', async () => ({ subscriptions: eventGrid.list() }));

  app.get<ById>('/v1/eventgrid/subscriptions/:id', async (request) => {
    const subscription = eventGrid.get(request.params.id);
    if (subscription === undefined) throw unknown(request.params.id);
    return { subscription };
  });

  app.delete<ById>('/v1/eventgrid/subscriptions/:id', async (request) => {
    const subscription = eventGrid.remove(request.params.id);
    if (subscription === undefined) throw unknown(request.params.id);
    return { subscription };
  });

  app.get<ById>('/v1/eventgrid/subscriptions/:id/deadletters', async (request) => {
    const deadLetters = eventGrid.deadLetters(request.params.id);
    if (deadLetters === undefined) throw unknown(request.params.id);
    return { deadLetters };
  });
}
