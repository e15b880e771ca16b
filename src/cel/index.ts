export { compileFilter, filterConstraints, validateFilter, FILTER_LIMITS } from './filter.js';
export type { ConstraintValue, DataConstraint, FilterConstraints } from './constraints.js';
export type { CompiledFilter, FilterResult, FilterValidation } from './filter.js';
export { FilterCompileError } from './errors.js';
export { FUNCTION_RULES, MACROS, TYPE_NAMES } from './functions.js';
