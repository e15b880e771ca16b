export { compileFilter, compileFilterSteps, filterConstraints, interpretedFilterCount, validateFilter, FILTER_LIMITS } from './filter.js';
export type { ConstraintValue, DataConstraint, FilterConstraints } from './constraints.js';
export type { CompiledFilter } from './filter.js';
export { FilterCompileError } from './errors.js';
