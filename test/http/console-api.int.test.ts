/** The console's GraphQL fields on PostgreSQL (the suite: console-api-suite.ts). */
import { consoleApiSuite } from './console-api-suite.js';

consoleApiSuite('postgres');
