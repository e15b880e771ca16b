/**
 * The subset of OpenAPI v3 / JSON Schema our CRD schemas use, and a type-level `Infer<S>` that turns an
 * `as const` schema into its TypeScript type. Structural-schema rules apply (no $ref, no type arrays;
 * `nullable: true` instead), so the same object is valid as a CRD `openAPIV3Schema` and for ajv.
 */
export type SchemaType = 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';

export interface Schema {
  readonly type?: SchemaType;
  readonly description?: string;
  readonly properties?: { readonly [k: string]: Schema };
  readonly required?: readonly string[];
  readonly additionalProperties?: Schema | boolean;
  readonly items?: Schema;
  readonly enum?: readonly (string | number | boolean)[];
  readonly default?: unknown;
  readonly nullable?: boolean;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly format?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly uniqueItems?: boolean;
  readonly oneOf?: readonly Schema[];
  readonly anyOf?: readonly Schema[];
  readonly allOf?: readonly Schema[];
  readonly not?: Schema;
  readonly 'x-kubernetes-preserve-unknown-fields'?: boolean;
  readonly 'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  readonly 'x-kubernetes-list-map-keys'?: readonly string[];
  readonly 'x-kubernetes-map-type'?: 'atomic' | 'granular';
}

type Simplify<T> = { [K in keyof T]: T[K] } & {};

type Nullable<S, T> = S extends { readonly nullable: true } ? T | null : T;

type RequiredKeys<S> = S extends { readonly required: readonly (infer R)[] } ? R : never;

/** Keys that are always present after validation: required ones and those with a default. */
type PresentKey<P, K extends keyof P, R> = K extends R ? true : P[K] extends { readonly default: unknown } ? true : false;

type InferObject<P, R> = Simplify<
  { -readonly [K in keyof P as PresentKey<P, K, R> extends true ? K : never]: Infer<P[K]> } & {
    -readonly [K in keyof P as PresentKey<P, K, R> extends true ? never : K]?: Infer<P[K]>;
  }
>;

/** The TypeScript type of a value that validates against schema `S` (after defaults are applied). */
export type Infer<S> = Nullable<
  S,
  S extends { readonly enum: readonly (infer E)[] }
    ? E
    : S extends { readonly type: 'string' }
      ? string
      : S extends { readonly type: 'integer' | 'number' }
        ? number
        : S extends { readonly type: 'boolean' }
          ? boolean
          : S extends { readonly type: 'array'; readonly items: infer I }
            ? Infer<I>[]
            : S extends { readonly type: 'object'; readonly properties: infer P }
              ? InferObject<P, RequiredKeys<S>>
              : S extends { readonly type: 'object'; readonly additionalProperties: infer A extends Schema }
                ? Record<string, Infer<A>>
                : S extends { readonly type: 'object' }
                  ? Record<string, unknown>
                  : unknown
>;

/** Identity with a constraint: keeps the literal type of an `as const` schema while checking its shape. */
export function defineSchema<const S extends Schema>(s: S): S {
  return s;
}
