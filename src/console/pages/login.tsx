import { useState } from 'preact/hooks';
import { ErrorNote } from '../components/common.js';

export function LoginPage({
  onLogin,
  error,
  checking,
}: {
  onLogin: (key: string) => Promise<void>;
  error?: Error | undefined;
  checking: boolean;
}) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (key.trim() === '') return;
    setBusy(true);
    await onLogin(key.trim());
    setBusy(false);
    setKey('');
  };
  return (
    <article class="login">
      <h1>certmgr-notify</h1>
      <p>Sign in with an API key of scope admin or read. The key stays in this tab (session storage) until you log out.</p>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          required
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby={error ? 'login-error' : undefined}
        />
        <button type="submit" aria-busy={busy || checking ? 'true' : undefined} disabled={busy || checking}>
          Sign in
        </button>
      </form>
      <div id="login-error">
        <ErrorNote error={error} />
      </div>
    </article>
  );
}
