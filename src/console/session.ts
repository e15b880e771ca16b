/**
 * The API key of this browser tab: in memory, and in sessionStorage so a reload keeps it. Never localStorage
 * (it outlives the session), never the URL (history, logs, Referer).
 */
const STORAGE_KEY = 'certmgr-notify.apiKey';
let current: string | null | undefined;

export function storedKey(): string | null {
  if (current === undefined) {
    try {
      current = sessionStorage.getItem(STORAGE_KEY);
    } catch {
      current = null; // storage disabled: the key lives in memory only
    }
  }
  return current;
}

export function rememberKey(key: string): void {
  current = key;
  try {
    sessionStorage.setItem(STORAGE_KEY, key);
  } catch {
    // memory only
  }
}

export function forgetKey(): void {
  current = null;
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // nothing stored
  }
}
