import type { JSX } from 'preact';
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { apiFor, type Api } from './api.js';
import { asError } from './hooks.js';
import { PAGES, pageOf, type PageId } from './routes.js';
import { forgetKey, rememberKey, storedKey } from './session.js';
import { LoginPage } from './pages/login.js';
import { CertificatesPage } from './pages/certificates.js';
import { HealthPage } from './pages/health.js';
import { RoutersPage } from './pages/routers.js';
import { IntegrationsPage } from './pages/integrations.js';
import { DeliveriesPage } from './pages/deliveries.js';
import { SilencesPage } from './pages/silences.js';
import { TemplatesPage } from './pages/templates.js';
import { ClustersPage } from './pages/clusters.js';

export interface Viewer {
  companyId: string;
  scope: string;
}

export interface PageProps {
  api: Api;
  /** The key may change things (admin): read keys see no create/edit/retry controls. */
  canWrite: boolean;
}

const VIEWER = `query Viewer { viewer { companyId scope } }`;

const PAGE_COMPONENTS: Record<PageId, (p: PageProps) => JSX.Element> = {
  certificates: CertificatesPage,
  health: HealthPage,
  routers: RoutersPage,
  integrations: IntegrationsPage,
  deliveries: DeliveriesPage,
  silences: SilencesPage,
  templates: TemplatesPage,
  clusters: ClustersPage,
};

function useHashPage(): PageId {
  const [page, setPage] = useState(() => pageOf(location.hash));
  useEffect(() => {
    const on = () => setPage(pageOf(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return page;
}

export function App() {
  const [key, setKey] = useState<string | null>(() => storedKey());
  const [viewer, setViewer] = useState<Viewer | undefined>();
  const [loginError, setLoginError] = useState<Error | undefined>();
  const page = useHashPage();

  const logout = useCallback(() => {
    forgetKey();
    setKey(null);
    setViewer(undefined);
  }, []);
  const api = useMemo(() => (key ? apiFor(key, logout) : undefined), [key, logout]);

  // a stored key (page reload) is checked again: it may have been revoked since
  useEffect(() => {
    if (!api || viewer) return;
    api<{ viewer: Viewer }>(VIEWER).then(
      (r) => setViewer(r.viewer),
      (e: unknown) => {
        setLoginError(asError(e));
        forgetKey();
        setKey(null);
      },
    );
  }, [api, viewer]);

  useEffect(() => {
    const title = PAGES.find((p) => p.id === page)?.title ?? '';
    document.title = viewer ? `${title} · certmgr-notify` : 'Sign in · certmgr-notify';
  }, [page, viewer]);

  const login = async (typed: string) => {
    setLoginError(undefined);
    try {
      const r = await apiFor(typed, () => undefined)<{ viewer: Viewer }>(VIEWER);
      rememberKey(typed);
      setKey(typed);
      setViewer(r.viewer);
    } catch (e) {
      setLoginError(asError(e));
    }
  };

  if (!api || !viewer)
    return (
      <main class="container">
        <LoginPage onLogin={login} error={loginError} checking={!!api && !viewer} />
      </main>
    );

  const Page = PAGE_COMPONENTS[page];
  return (
    <>
      <a class="skip-link" href="#content">
        Skip to content
      </a>
      <header class="container">
        <nav aria-label="Pages">
          <ul>
            <li>
              <strong>certmgr-notify</strong>
            </li>
          </ul>
          <ul class="nav-pages">
            {PAGES.map((p) => (
              <li key={p.id}>
                <a href={`#/${p.id}`} aria-current={p.id === page ? 'page' : undefined}>
                  {p.title}
                </a>
              </li>
            ))}
          </ul>
          <ul>
            <li>
              <small data-testid="viewer">
                scope <strong>{viewer.scope}</strong>
              </small>
            </li>
            <li>
              <button type="button" class="secondary outline" onClick={logout}>
                Log out
              </button>
            </li>
          </ul>
        </nav>
      </header>
      <main class="container" id="content" tabIndex={-1}>
        <Page key={page} api={api} canWrite={viewer.scope === 'admin'} />
      </main>
    </>
  );
}
