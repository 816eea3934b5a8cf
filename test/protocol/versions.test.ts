import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  API_VERSIONS,
  INSTANCE_API_VERSIONS,
  LATEST_API_VERSION,
  NEWEST_VERSIONS,
  checkApiVersion,
  checkInstanceApiVersion,
  featuresOf,
  isApiVersion,
  type ApiVersion,
} from '../../src/protocol/versions.js';
import type { EventType } from '../../src/protocol/types.js';

const MISSING = 'Bad request. api-version was not specified in the request. For more information refer to aka.ms/azureimds';
const INVALID = 'Bad request. api-version is invalid or was not specified in the request. For more information refer to aka.ms/azureimds';
const NEWEST3 = ['2020-07-01', '2019-08-01', '2019-04-01'];

// The SPEC table, row by row, written out by hand rather than derived.
const EXPECTED: Record<
  ApiVersion,
  {
    preview: boolean;
    underscorePrefix: boolean;
    metadataHeaderRequired: boolean;
    eventTypes: EventType[];
    description: boolean;
    eventSource: boolean;
    durationInSeconds: boolean;
  }
> = {
  '2017-03-01': {
    preview: true,
    underscorePrefix: true,
    metadataHeaderRequired: false,
    eventTypes: ['Freeze', 'Reboot', 'Redeploy'],
    description: false,
    eventSource: false,
    durationInSeconds: false,
  },
  '2017-08-01': {
    preview: false,
    underscorePrefix: false,
    metadataHeaderRequired: true,
    eventTypes: ['Freeze', 'Reboot', 'Redeploy'],
    description: false,
    eventSource: false,
    durationInSeconds: false,
  },
  '2017-11-01': {
    preview: false,
    underscorePrefix: false,
    metadataHeaderRequired: true,
    eventTypes: ['Freeze', 'Reboot', 'Redeploy', 'Preempt'],
    description: false,
    eventSource: false,
    durationInSeconds: false,
  },
  '2019-01-01': {
    preview: false,
    underscorePrefix: false,
    metadataHeaderRequired: true,
    eventTypes: ['Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate'],
    description: false,
    eventSource: false,
    durationInSeconds: false,
  },
  '2019-04-01': {
    preview: false,
    underscorePrefix: false,
    metadataHeaderRequired: true,
    eventTypes: ['Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate'],
    description: true,
    eventSource: false,
    durationInSeconds: false,
  },
  '2019-08-01': {
    preview: false,
    underscorePrefix: false,
    metadataHeaderRequired: true,
    eventTypes: ['Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate'],
    description: true,
    eventSource: true,
    durationInSeconds: false,
  },
  '2020-07-01': {
    preview: false,
    underscorePrefix: false,
    metadataHeaderRequired: true,
    eventTypes: ['Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate'],
    description: true,
    eventSource: true,
    durationInSeconds: true,
  },
};

describe('API_VERSIONS', () => {
  it('lists the seven seed versions, oldest first', () => {
    assert.deepEqual([...API_VERSIONS], ['2017-03-01', '2017-08-01', '2017-11-01', '2019-01-01', '2019-04-01', '2019-08-01', '2020-07-01']);
    assert.deepEqual([...API_VERSIONS].sort(), [...API_VERSIONS]);
  });

  it('LATEST is 2020-07-01 and NEWEST_VERSIONS is the list newest first', () => {
    assert.equal(LATEST_API_VERSION, '2020-07-01');
    assert.deepEqual([...NEWEST_VERSIONS], [...API_VERSIONS].reverse());
    assert.equal(NEWEST_VERSIONS[0], LATEST_API_VERSION);
  });
});

describe('featuresOf', () => {
  for (const v of API_VERSIONS) {
    it(`matches the SPEC table for ${v}`, () => {
      const f = featuresOf(v);
      const want = EXPECTED[v];
      assert.equal(f.preview, want.preview, 'preview');
      assert.equal(f.underscorePrefix, want.underscorePrefix, 'underscorePrefix');
      assert.equal(f.metadataHeaderRequired, want.metadataHeaderRequired, 'metadataHeaderRequired');
      assert.deepEqual([...f.eventTypes].sort(), [...want.eventTypes].sort(), 'eventTypes');
      assert.equal(f.description, want.description, 'description');
      assert.equal(f.eventSource, want.eventSource, 'eventSource');
      assert.equal(f.durationInSeconds, want.durationInSeconds, 'durationInSeconds');
    });
  }

  it('returns the same precomputed object each time', () => {
    assert.equal(featuresOf('2019-01-01'), featuresOf('2019-01-01'));
  });

  it('each feature, once present, stays present in every later version', () => {
    const flags = ['description', 'eventSource', 'durationInSeconds', 'metadataHeaderRequired'] as const;
    for (const flag of flags) {
      const first = API_VERSIONS.findIndex((v) => featuresOf(v)[flag]);
      API_VERSIONS.forEach((v, i) => assert.equal(featuresOf(v)[flag], i >= first, `${flag} @ ${v}`));
    }
  });
});

describe('isApiVersion', () => {
  it('accepts exactly the seven versions', () => {
    for (const v of API_VERSIONS) assert.equal(isApiVersion(v), true);
    for (const x of ['latest', '2020-07-02', '', ' 2020-07-01', undefined, null, 20200701, ['2020-07-01']]) {
      assert.equal(isApiVersion(x), false, String(x));
    }
  });
});

describe('checkApiVersion', () => {
  for (const v of API_VERSIONS) {
    it(`accepts ${v}`, () => {
      assert.deepEqual(checkApiVersion(v), { ok: true, version: v });
    });
  }

  it('missing (undefined) gets the "not specified" error with newest-versions', () => {
    assert.deepEqual(checkApiVersion(undefined), { ok: false, body: { error: MISSING, 'newest-versions': NEWEST3 } });
  });

  it('empty string gets the "not specified" error', () => {
    assert.deepEqual(checkApiVersion(''), { ok: false, body: { error: MISSING, 'newest-versions': NEWEST3 } });
  });

  const invalid: [string, unknown][] = [
    ['latest', 'latest'],
    ['{latest}', '{latest}'],
    ['unknown date', '2020-07-02'],
    ['unpadded date', '2020-7-1'],
    ['leading space', ' 2020-07-01'],
    ['trailing space', '2020-07-01 '],
    ['uppercase junk', 'LATEST'],
    ['uppercase junk 2', 'ABCD-EF-GH'],
    ['repeated parameter', ['2020-07-01', '2020-07-01']],
    ['single-element array', ['2020-07-01']],
    ['number', 20200701],
    ['null', null],
    ['object', { v: '2020-07-01' }],
    ['instance-only version', '2021-02-01'],
  ];
  for (const [name, raw] of invalid) {
    it(`rejects ${name} as invalid`, () => {
      assert.deepEqual(checkApiVersion(raw), { ok: false, body: { error: INVALID, 'newest-versions': NEWEST3 } });
    });
  }

  it('newest-versions are the three newest, newest first, and fresh arrays', () => {
    const a = checkApiVersion('nope');
    const b = checkApiVersion('nope');
    assert.equal(a.ok, false);
    assert.equal(b.ok, false);
    if (a.ok || b.ok) return;
    assert.deepEqual(a.body['newest-versions'], NEWEST3);
    assert.notEqual(a.body['newest-versions'], b.body['newest-versions']);
  });
});

describe('checkInstanceApiVersion', () => {
  it('has the public list, sorted, without duplicates', () => {
    assert.equal(INSTANCE_API_VERSIONS.length, 31);
    assert.deepEqual([...INSTANCE_API_VERSIONS].sort(), [...INSTANCE_API_VERSIONS]);
    assert.equal(new Set(INSTANCE_API_VERSIONS).size, INSTANCE_API_VERSIONS.length);
  });

  it('accepts every listed version', () => {
    for (const v of INSTANCE_API_VERSIONS) assert.deepEqual(checkInstanceApiVersion(v), { ok: true, version: v });
  });

  it('uses the same error texts with its own newest versions', () => {
    const newest = ['2023-07-01', '2021-12-13', '2021-11-15'];
    assert.deepEqual(checkInstanceApiVersion(undefined), {
      ok: false,
      body: { error: MISSING, 'newest-versions': newest },
    });
    assert.deepEqual(checkInstanceApiVersion(''), { ok: false, body: { error: MISSING, 'newest-versions': newest } });
    for (const raw of ['latest', '2019-01-01', ['2021-02-01'], 7]) {
      assert.deepEqual(checkInstanceApiVersion(raw), {
        ok: false,
        body: { error: INVALID, 'newest-versions': newest },
      });
    }
  });
});
