/**
 * Which email addresses EMAIL integrations may use (pure). Every message goes through the operator's one SMTP
 * relay, so the relay's reputation and its SPF/DKIM/DMARC alignment are the operator's:
 *
 * - An address is `local@domain` with an ASCII dot-atom local part and a DNS domain name of at least two labels
 *   (an internationalized name is taken in its ASCII form). Address literals (`a@[127.0.0.1]`,
 *   `a@[IPv6:::1]`), bare IP addresses, quoted local parts, comments and display names are refused: they
 *   steer the relay to hosts of the tenant's choosing or hide the real recipient.
 * - A tenant's `from` must be in a sender domain the operator allows (--smtp-sender-domains: `example.com`
 *   exactly, `*.example.com` its subdomains). Without the flag the only allowed domain is the one of
 *   --smtp-from: the relay is set up to send as that domain, and any other one would be spoofing it.
 */
import { domainToASCII } from 'node:url';

/** RFC 5322 atext: the characters of a dot-atom's atoms. */
const ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+$/;
const LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;
/** RFC 5321: 64 characters of local part, 255 of domain; 254 in all (the path's 256 less the brackets). */
const MAX_LOCAL = 64;
const MAX_ADDRESS = 254;

/** Why `domain` is not a DNS domain name of at least two labels, or its ASCII form. */
function domainProblem(domain: string): { problem: string } | { ascii: string } {
  if (domain.startsWith('[')) return { problem: 'has an address literal as its domain' };
  // letters (any script), marks, digits, dots and hyphens only: domainToASCII would also decode %41 and map
  // full-width dots, so what the relay receives would differ from what was checked. domainToASCII maps an IDN
  // to punycode and lower-cases; it answers '' for what is not a host name.
  const ascii = /^[\p{L}\p{M}\p{N}.-]+$/u.test(domain) ? domainToASCII(domain) : '';
  const labels = ascii.split('.');
  if (ascii === '' || ascii.length > 253 || labels.length < 2 || !labels.every((l) => LABEL.test(l)))
    return { problem: 'has no DNS domain name (two or more labels of letters, digits and hyphens)' };
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) return { problem: 'has an IP address as its domain' };
  return { ascii };
}

/** Why `v` is not a plain `local@domain` address, or null. */
export function emailAddressProblem(v: string): string | null {
  if (v.length > MAX_ADDRESS) return `is longer than ${MAX_ADDRESS} characters`;
  const at = v.lastIndexOf('@');
  if (at < 0) return 'has no @';
  const local = v.slice(0, at);
  const domain = v.slice(at + 1);
  if (local === '' || local.length > MAX_LOCAL || !local.split('.').every((a) => ATOM.test(a)))
    return `has no plain local part (at most ${MAX_LOCAL} letters, digits and !#$%&'*+/=?^_\`{|}~- in dot-separated atoms)`;
  const d = domainProblem(domain);
  return 'problem' in d ? d.problem : null;
}

/** The ASCII, lower-case domain of an address that passed emailAddressProblem. */
export function emailDomainOf(address: string): string {
  return domainToASCII(address.slice(address.lastIndexOf('@') + 1));
}

/** The address inside a sender as nodemailer also takes it (`Name <a@b>`), or the text itself. */
function bareAddress(sender: string): string {
  return /<([^<>]*)>\s*$/.exec(sender)?.[1] ?? sender.trim();
}

/**
 * The sender domains from --smtp-sender-domains (entries `example.com` or `*.example.com`), lower case and
 * ASCII; with none given, the domain of --smtp-from. Throws an Error naming a bad entry.
 */
export function parseSenderDomains(entries: readonly string[], smtpFrom: string): string[] {
  const out = entries.map((raw) => {
    const e = raw.trim();
    const wildcard = e.startsWith('*.');
    const d = domainProblem(wildcard ? e.slice(2) : e);
    if ('problem' in d) throw new Error(`'${e.slice(0, 100)}' is not a domain name or *.domain: it ${d.problem}`);
    return wildcard ? `*.${d.ascii}` : d.ascii;
  });
  if (out.length > 0) return [...new Set(out)];
  const from = bareAddress(smtpFrom);
  const at = from.lastIndexOf('@');
  const domain = at < 0 ? '' : domainToASCII(from.slice(at + 1));
  if (domain === '') throw new Error(`--smtp-from '${smtpFrom.slice(0, 100)}' has no domain to allow as the sender domain`);
  return [domain];
}

/** Whether `domain` (ASCII, lower case) is one of the allowed sender domains. */
export function senderDomainAllowed(domain: string, allowed: readonly string[]): boolean {
  return allowed.some((p) => (p.startsWith('*.') ? domain.endsWith(p.slice(1)) && domain.length > p.length - 1 : domain === p));
}

/** Why a tenant's `from` may not be used on the relay, or null. */
export function senderProblem(from: string, allowed: readonly string[]): string | null {
  const bad = emailAddressProblem(from);
  if (bad) return `is not a plain email address: it ${bad}`;
  const domain = emailDomainOf(from);
  if (senderDomainAllowed(domain, allowed)) return null;
  return `uses the sender domain ${domain}, which this service's SMTP relay does not send for; allowed: ${allowed.join(', ')}`;
}
