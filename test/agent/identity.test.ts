import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAgentConfig } from '../../src/agent/config.js';
import { resolveVmName } from '../../src/agent/identity.js';
import { ScheduledEventsClient } from '../../src/client/index.js';

const config = (extra = '') => parseAgentConfig(`${extra}\nrules: [{name: r}]\n`, 'agent.yaml');

function client(answer: () => Response | Promise<Response>): { client: ScheduledEventsClient; calls: string[] } {
  const calls: string[] = [];
  const fetchStub = async (input: string | URL | Request) => {
    calls.push(String(input instanceof Request ? input.url : input));
    return answer();
  };
  return {
    calls,
    client: new ScheduledEventsClient({
      endpoint: 'http://imds.test',
      fetch: fetchStub as typeof fetch,
      retry: { maxAttempts: 1, goneForMs: 0 },
      sleep: async () => {},
    }),
  };
}

const compute = (body: object) => () =>
  new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });

describe('resolveVmName', () => {
  it('uses vmName from the config without asking IMDS', async () => {
    const c = client(() => assert.fail('IMDS was asked'));
    assert.equal(await resolveVmName(config('vmName: web-0'), c.client), 'web-0');
    assert.equal(c.calls.length, 0);
  });

  it('asks IMDS compute when vmName is not set', async () => {
    const c = client(compute({ name: 'web-3', vmId: 'x' }));
    assert.equal(await resolveVmName(config(), c.client), 'web-3');
    assert.match(c.calls[0]!, /\/metadata\/instance\/compute\?/);
  });

  it('keeps a scale-set instance name as IMDS gives it', async () => {
    const c = client(compute({ name: 'myss_3', vmScaleSetName: 'myss' }));
    assert.equal(await resolveVmName(config(), c.client), 'myss_3');
  });

  it('says to set vmName or check IMDS when IMDS fails', async () => {
    const c = client(() => {
      throw new TypeError('fetch failed');
    });
    await assert.rejects(
      resolveVmName(config(), c.client),
      /cannot learn this VM's name from IMDS.*set vmName in the agent config, or check that IMDS is reachable/,
    );
    const bad = client(compute({ vmId: 'no name' }));
    await assert.rejects(resolveVmName(config(), bad.client), /set vmName/);
  });

  it('names the URL it tried, so an agent started away from Azure says where it looked', async () => {
    const c = client(() => {
      throw new TypeError('fetch failed');
    });
    await assert.rejects(resolveVmName(config(), c.client), (err: Error) => {
      assert.match(err.message, /http:\/\/imds\.test\/metadata\/instance\/compute\?api-version=/);
      assert.match(err.message, /FOREWARN_ENDPOINT or endpoint/);
      return true;
    });
  });
});
