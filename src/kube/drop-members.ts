/**
 * Removes JSON object members by key from raw JSON bytes before they are parsed, pure: a LIST page of TLS Secrets
 * is ~60% `tls.key` and `ca.crt` values that the emitter never reads, and parsing them made each page twice the
 * garbage (and put every private key of the cluster into this process's heap as a string). Only members whose
 * value is a plain base64 string (what the apiserver writes for a Secret's data) are removed; anything else that
 * matches the key (an annotation of that name with another value) is left as it is. The result is valid JSON
 * whenever the input is: a member is removed with the comma after it, or the one before it when it is last.
 */
const BASE64 = new Uint8Array(256);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=') BASE64[c.charCodeAt(0)] = 1;
const QUOTE = 0x22;
const COMMA = 0x2c;

export function dropBase64Members(json: Buffer, keys: readonly string[]): Buffer {
  const patterns = keys.map((k) => Buffer.from(`${JSON.stringify(k)}:"`));
  /** the members to remove, [start, end) without commas */
  const members: [number, number][] = [];
  for (const p of patterns) {
    for (let at = json.indexOf(p); at >= 0; at = json.indexOf(p, at + p.length)) {
      let end = at + p.length;
      while (end < json.length && BASE64[json[end]!]) end++;
      if (json[end] !== QUOTE) continue; // not a plain base64 string: leave it
      members.push([at, end + 1]);
    }
  }
  if (!members.length) return json;
  members.sort((a, b) => a[0] - b[0]);
  // neighbours separated by one comma are removed together, with one comma: after the run, else before it
  const parts: Buffer[] = [];
  let from = 0;
  for (let i = 0; i < members.length; ) {
    const start = members[i]![0];
    let end = members[i]![1];
    for (i++; i < members.length && members[i]![0] === end + 1 && json[end] === COMMA; i++) end = members[i]![1];
    const cut: [number, number] = json[end] === COMMA ? [start, end + 1] : json[start - 1] === COMMA ? [start - 1, end] : [start, end];
    parts.push(json.subarray(from, cut[0]));
    from = cut[1];
  }
  parts.push(json.subarray(from));
  return Buffer.concat(parts);
}
