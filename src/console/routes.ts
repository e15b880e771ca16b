/** The console's pages and their hash routes (`#/health`: the hub's consoleUrl template variable links to them). */
export const PAGES = [
  { id: 'certificates', title: 'Certificates' },
  { id: 'health', title: 'Health' },
  { id: 'routers', title: 'Routers' },
  { id: 'integrations', title: 'Integrations' },
  { id: 'deliveries', title: 'Deliveries' },
  { id: 'silences', title: 'Silences' },
  { id: 'templates', title: 'Templates' },
  { id: 'clusters', title: 'Clusters' },
] as const;

export type PageId = (typeof PAGES)[number]['id'];

/** `#/routers` or `#/routers?x` → routers; anything unknown → certificates. */
export function pageOf(hash: string): PageId {
  const id = hash.replace(/^#\/?/, '').split(/[/?]/)[0];
  return PAGES.find((p) => p.id === id)?.id ?? 'certificates';
}
