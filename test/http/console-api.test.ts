/** The console's GraphQL fields on SQLite (the suite: console-api-suite.ts). */
import { consoleApiSuite } from './console-api-suite.js';

consoleApiSuite('sqlite');
