/**
 * CustomResourceDefinition envelopes (wire form: `x-kubernetes-*` keys, as kubectl/helm read them) built from
 * the kind definitions. `src/tools/gen-crds.ts` writes them to `crds/` and the chart; the drift test compares.
 */
import { stringify } from 'yaml';
import { CATEGORY, GROUP, VERSION, crdName, type KindDef } from './meta.js';
import type { Schema } from './schema.js';

const GENERATED_HEADER = '# Generated from src/api by src/tools/gen-crds.ts (npm run gen:crds). Do not edit.\n';

export interface CrdWire {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels: Record<string, string> };
  spec: Record<string, unknown>;
}

/** Drops keys that are TypeScript-side only; keeps the schema structural. */
function wireSchema(s: Schema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(s)) as Record<string, unknown>;
}

export function buildCrd(k: KindDef): CrdWire {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: crdName(k),
      labels: { 'app.kubernetes.io/name': 'certmgr-notify', 'app.kubernetes.io/component': 'crd' },
    },
    spec: {
      group: GROUP,
      scope: k.scope,
      names: {
        kind: k.kind,
        listKind: k.listKind,
        plural: k.plural,
        singular: k.singular,
        shortNames: k.shortNames,
        categories: [CATEGORY],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: k.printerColumns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: k.description,
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: wireSchema(k.specSchema),
                status: wireSchema(k.statusSchema),
              },
              required: ['spec'],
            },
          },
        },
      ],
    },
  };
}

/** The YAML file content for one kind. Deterministic (key order of the schema objects). */
export function crdYaml(k: KindDef): string {
  return GENERATED_HEADER + stringify(buildCrd(k), { lineWidth: 0, aliasDuplicateObjects: false });
}

/** `<plural>.<group>.yaml` */
export function crdFileName(k: KindDef): string {
  return `${crdName(k)}.yaml`;
}
