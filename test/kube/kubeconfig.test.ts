import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { podNamespace } from '../../src/kube/kubeconfig.js';

describe('podNamespace (the operator lease and the emitter state default to it)', () => {
  const dir = (content?: string): string => {
    const d = mkdtempSync(join(tmpdir(), 'sa-'));
    if (content !== undefined) writeFileSync(join(d, 'namespace'), content);
    return d;
  };
  it.each([
    ['certmgr-notify\n', 'certmgr-notify'],
    ['  \n', 'default'],
    [undefined, 'default'],
  ])('namespace file %j → %s', (content, want) => expect(podNamespace(dir(content))).toBe(want));
});
