import { expiryTimeline } from '../timeline.js';

const BAR_MAX = 300;
const ROW = 22;
const LABEL_W = 110;

/** Expiries per coming week as an SVG bar list (attributes, not styles: the CSP allows no inline style). */
export function ExpiryTimeline({ days }: { days: (number | null)[] }) {
  const buckets = expiryTimeline(days);
  const max = Math.max(1, ...buckets.map((b) => b.count));
  const height = buckets.length * ROW;
  const summary = buckets
    .filter((b) => b.count > 0)
    .map((b) => `${b.label}: ${b.count}`)
    .join(', ');
  return (
    <figure class="timeline">
      <svg
        role="img"
        aria-label={`Certificates by days until expiry. ${summary || 'none'}`}
        viewBox={`0 0 ${LABEL_W + BAR_MAX + 50} ${height}`}
        width="100%"
        height={height}
        preserveAspectRatio="xMinYMin meet"
      >
        {buckets.map((b, i) => (
          <g key={b.label} transform={`translate(0 ${i * ROW})`}>
            <text x={LABEL_W - 8} y={ROW / 2 + 5} text-anchor="end" class="timeline-label">
              {b.label}
            </text>
            <rect x={LABEL_W} y={3} height={ROW - 6} width={Math.round((b.count / max) * BAR_MAX)} class={`timeline-bar bar-${b.kind}`}>
              <title>{`${b.label}: ${b.count}`}</title>
            </rect>
            <text x={LABEL_W + Math.round((b.count / max) * BAR_MAX) + 6} y={ROW / 2 + 5} class="timeline-count">
              {b.count}
            </text>
          </g>
        ))}
      </svg>
      <figcaption>Expiries per week (from days left)</figcaption>
    </figure>
  );
}
