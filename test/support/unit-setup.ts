// Setup file of the `unit` project (vitest.config.ts): the tier starts no program but Node.
import { installGuard } from './unit-tier.js';

installGuard();
