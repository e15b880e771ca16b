/**
 * Just enough of the Dockerfile and .dockerignore languages to replay this repository's Dockerfile outside Docker
 * (test/image/image.int.test.ts): stages, instructions with line continuations, ARG defaults in FROM, JSON-form
 * ENTRYPOINT/CMD/VOLUME, COPY sources and the build context's ignore patterns. Anything else throws, so a
 * Dockerfile using more than the replay understands fails the test instead of being half-replayed.
 */

export interface Instruction {
  op: string;
  /** the text after the keyword, continuations joined */
  args: string;
}

export interface Stage {
  from: string;
  name?: string;
  instructions: Instruction[];
}

export interface Dockerfile {
  stages: Stage[];
}

/** Splits a Dockerfile into stages; `ARG`s before the first FROM are substituted into FROM lines. */
export function parseDockerfile(text: string): Dockerfile {
  const logical: Instruction[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (!pending && /^\s*(#|$)/.test(line)) continue;
    if (pending && /^\s*#/.test(line)) continue; // comment lines inside a continuation are dropped, as Docker does
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1) + ' ';
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    const m = /^(\w+)\s*(.*)$/s.exec(full);
    if (!m) throw new Error(`Dockerfile: cannot read the line "${full}"`);
    logical.push({ op: m[1]!.toUpperCase(), args: m[2]!.trim() });
  }
  if (pending) throw new Error('Dockerfile: ends inside a line continuation');

  const globalArgs = new Map<string, string>();
  const stages: Stage[] = [];
  for (const ins of logical) {
    if (ins.op === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!m) throw new Error(`Dockerfile: FROM "${ins.args}" is not "image [AS name]"`);
      const from = m[1]!.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a?: string, b?: string) => {
        const name = (a ?? b)!;
        const v = globalArgs.get(name);
        if (v === undefined) throw new Error(`Dockerfile: FROM uses \${${name}} with no default ARG before the first FROM`);
        return v;
      });
      stages.push({ from, ...(m[2] ? { name: m[2] } : {}), instructions: [] });
    } else if (stages.length === 0) {
      if (ins.op !== 'ARG') throw new Error(`Dockerfile: ${ins.op} before the first FROM`);
      const m = /^(\w+)=(\S+)$/.exec(ins.args);
      if (m) globalArgs.set(m[1]!, m[2]!);
    } else {
      stages.at(-1)!.instructions.push(ins);
    }
  }
  return { stages };
}

/** The JSON (exec) form of ENTRYPOINT / CMD / VOLUME; the shell form is refused (signals would go to a shell). */
export function execForm(ins: Instruction): string[] {
  let v: unknown;
  try {
    v = JSON.parse(ins.args);
  } catch {
    throw new Error(`Dockerfile: ${ins.op} ${ins.args} is not the JSON (exec) form`);
  }
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) throw new Error(`Dockerfile: ${ins.op} is not an array of strings`);
  return v as string[];
}

export interface Copy {
  /** the stage named by --from, if any */
  from?: string;
  sources: string[];
  dest: string;
}

export function parseCopy(ins: Instruction): Copy {
  const words = ins.args.split(/\s+/);
  let from: string | undefined;
  while (words[0]?.startsWith('--')) {
    const flag = words.shift()!;
    const m = /^--from=(\S+)$/.exec(flag);
    if (!m) throw new Error(`Dockerfile: COPY flag ${flag} is not understood by the replay`);
    from = m[1];
  }
  if (words.length < 2) throw new Error(`Dockerfile: COPY ${ins.args} needs a source and a destination`);
  const dest = words.pop()!;
  return { ...(from ? { from } : {}), sources: words, dest };
}

/** .dockerignore: a path is excluded when the last pattern matching it or one of its parents is not a `!` one. */
export function dockerignore(text: string): (relPath: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!');
      const pat = (negate ? l.slice(1) : l).replace(/^\/+|\/+$/g, '');
      const re = pat
        .split('/')
        .map((seg) =>
          seg === '**'
            ? '.*'
            : seg
                .replace(/[.+^${}()|[\]\\]/g, '\\$&')
                .replace(/\*/g, '[^/]*')
                .replace(/\?/g, '[^/]'),
        )
        .join('/')
        .replace(/\.\*\//g, '(?:.*/)?');
      return { negate, re: new RegExp(`^${re}$`) };
    });
  return (relPath: string) => {
    const parts = relPath.split('/');
    let excluded = false;
    for (let i = 1; i <= parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      for (const r of rules) if (r.re.test(p)) excluded = !r.negate;
    }
    return excluded;
  };
}
