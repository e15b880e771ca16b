/**
 * The Node check every entry runs before it imports anything: on an older Node a dependency crashes deep in its
 * own code instead of saying what is wrong. Self-contained (no imports, no outer names): build.mjs puts
 * nodeVersionProblem's source at the top of the bundle.
 */

/** The message for a Node older than `needed` (package.json engines), or null. `version`: process.version. */
export function nodeVersionProblem(version, needed = 24) {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1] ?? 0);
  return major >= needed ? null : `certmgr-notify needs Node ${needed} (found ${version}); use npm start or the image`;
}

/** Exits 2 with that message on an older Node. */
export function requireNode() {
  const problem = nodeVersionProblem(process.version);
  if (problem === null) return;
  process.stderr.write(`${problem}\n`);
  process.exit(2);
}
