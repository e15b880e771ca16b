/**
 * Helpers for the X.509 texts node:crypto's X509Certificate gives (facts.ts parses the chain): distinguished
 * names on one line, the CN, the DNS names of a subjectAltName.
 */

/** The RDN lines of X509Certificate's multi-line distinguished name. */
export function dnLines(dn: string): string[] {
  return dn
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean);
}

export function commonNameOf(dn: string): string | undefined {
  for (const part of dn.split('\n')) {
    const m = /^CN=(.*)$/.exec(part.trim());
    if (m) return m[1];
  }
  return undefined;
}

/** DNS names of a subjectAltName string (`DNS:a, DNS:b, IP Address:1.2.3.4`); quoted values are unquoted. */
export function dnsNamesOf(san: string | undefined): string[] {
  if (!san) return [];
  const out: string[] = [];
  for (const m of san.matchAll(/DNS:("(?:[^"\\]|\\.)*"|[^,]*)/g)) {
    let v = (m[1] ?? '').trim();
    if (v.startsWith('"')) {
      try {
        v = JSON.parse(v) as string;
      } catch {
        v = v.slice(1, -1);
      }
    }
    if (v) out.push(v);
  }
  return out;
}
