/**
 * Line charts of benchmark results as SVG, drawn with Vega-Lite (compiled to Vega, rendered
 * headlessly: no browser, no canvas). Panels side by side share the x axis title and one legend;
 * each panel plots one figure per series against x (an offered rate, say), the median as a line
 * with a dot and, when there are several runs, the min–max range as a vertical bar.
 *
 *   await writeChart('bench/results/x.svg', { title, x: 'offered rate (notifications/s)', panels: [
 *     { title: 'Delivered', y: 'delivered (notifications/s)', rows: [{ series: 'a', x: 2000, y: 1990, min: 1980, max: 2000 }] },
 *     { title: 'p99 latency', y: 'p99 publish → receipt (ms)', log: true, rows: [...] },
 *   ]});
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

/** One point of one series: the median y at x, and its range over runs when known. */
export interface ChartRow {
  series: string;
  x: number;
  y: number | null | undefined;
  min?: number | null;
  max?: number | null;
}

export interface ChartPanel {
  title: string;
  /** Axis title, with the unit. */
  y: string;
  /** Logarithmic y scale (latencies spanning decades). */
  log?: boolean;
  rows: ChartRow[];
  /** Draws y = x, dashed grey, labelled so (e.g. 'offered': what a target keeping up delivers). */
  diagonal?: string;
  /** Horizontal reference lines, dashed grey, each labelled at the right. */
  guides?: { y: number; label: string }[];
}

/** How one series looks; series not listed get the default palette, in order of appearance. */
export interface ChartSeries {
  name: string;
  color?: string;
  dash?: number[];
}

export interface ChartOptions {
  title: string;
  subtitle?: string | string[];
  /** x axis title, with the unit. */
  x: string;
  /** Tick values of the x axis (the offered rates, say); default: the x values in the rows. */
  xTicks?: number[];
  panels: ChartPanel[];
  series?: ChartSeries[];
  /** Size of one panel's plot area in px. */
  width?: number;
  height?: number;
}

const FONT = 'Helvetica, Arial, sans-serif';
const GUIDE = '#8a8a8a';
const SUBTITLE_SIZE = 11;

/**
 * Headless Vega has no canvas to measure text and takes 0.8 em per character (about 1.6 times
 * real glyphs): a long subtitle line would widen the whole SVG. Lines are wrapped to what it takes
 * to fit `width`, at ' · ' between items when they allow, else at spaces.
 */
function wrap(lines: string[], width: number, fontSize: number): string[] {
  const max = Math.floor(width / (0.8 * fontSize));
  const pack = (parts: string[], joint: string) => {
    const out: string[] = [];
    let current = '';
    for (const part of parts) {
      if (current && current.length + joint.length + part.length > max) {
        out.push(current);
        current = part;
      } else current = current ? `${current}${joint}${part}` : part;
    }
    return current ? [...out, current] : out;
  };
  return lines.flatMap((line) => pack(line.split(' · '), ' · ').flatMap((piece) => (piece.length > max ? pack(piece.split(' '), ' ') : [piece])));
}

/** The Vega-Lite spec of the chart (exported so a caller can adjust it before rendering). */
export function chartSpec(options: ChartOptions): TopLevelSpec {
  const width = options.width ?? 380;
  const height = options.height ?? 280;
  const allRows = options.panels.flatMap((panel) => panel.rows);
  const xs = [...new Set(allRows.map((row) => row.x))].sort((a, b) => a - b);
  const xTicks = options.xTicks ?? xs;
  const names = [...new Set([...(options.series ?? []).map((s) => s.name).filter((name) => allRows.some((row) => row.series === name)), ...allRows.map((row) => row.series)])];
  const style = new Map((options.series ?? []).map((s) => [s.name, s]));
  const palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];
  const colors = names.map((name, index) => style.get(name)?.color ?? palette[index % palette.length]);
  const dashes = names.map((name) => style.get(name)?.dash ?? [1, 0]);
  const xMax = Math.max(...xTicks, ...xs);
  const xScale = { domain: [0, xMax * 1.04], nice: false, zero: true };
  const xAxis = { title: options.x, values: xTicks, format: ',d', labelAngle: 0, grid: true };
  const seriesLegend = { title: null, orient: 'bottom' as const, direction: 'horizontal' as const, columns: Math.min(3, names.length), symbolType: 'stroke', symbolSize: 400, symbolStrokeWidth: 2.5, labelLimit: 420, columnPadding: 24, rowPadding: 6 };
  const color = { field: 'series', type: 'nominal' as const, scale: { domain: names, range: colors }, legend: seriesLegend };
  const strokeDash = { field: 'series', type: 'nominal' as const, scale: { domain: names, range: dashes }, legend: seriesLegend };

  const panels = options.panels.map((panel) => {
    const rows = panel.rows
      .filter((row) => typeof row.y === 'number' && Number.isFinite(row.y) && (!panel.log || row.y > 0))
      .map((row) => ({ series: row.series, x: row.x, y: row.y, min: row.min ?? row.y, max: row.max ?? row.y }));
    const ys = rows.flatMap((row) => [row.y!, row.min!, row.max!, ...(panel.diagonal ? [row.x] : [])]).concat((panel.guides ?? []).map((g) => g.y));
    const yScale = panel.log
      ? { type: 'log' as const, domain: [10 ** Math.floor(Math.log10(Math.min(...ys))), 10 ** Math.ceil(Math.log10(Math.max(...ys)))] }
      : { zero: true, nice: true };
    const yAxis = { title: panel.y, format: panel.log ? '~s' : ',d', grid: true, ...(panel.log ? { tickCount: 10, labelExpr: 'log(datum.value) / LN10 % 1 === 0 ? format(datum.value, ",") : ""' } : {}) };
    const x = { field: 'x', type: 'quantitative' as const, scale: xScale, axis: xAxis };
    const y = { field: 'y', type: 'quantitative' as const, scale: yScale, axis: yAxis };
    const layers: object[] = [];
    if (panel.diagonal) {
      const line = [{ x: 0, y: 0 }, { x: xMax, y: xMax }];
      // The label sits on the line a little below its end, inside the plot (a label above the plot would push the panel's title up).
      layers.push(
        { data: { values: line }, mark: { type: 'line', color: GUIDE, strokeDash: [4, 4], strokeWidth: 1 }, encoding: { x: { field: 'x', type: 'quantitative' }, y: { field: 'y', type: 'quantitative' } } },
        {
          data: { values: [{ x: xMax * 0.92, y: xMax * 0.92, label: panel.diagonal }] },
          mark: { type: 'text', align: 'right', dx: -6, dy: -8, color: GUIDE, fontSize: 11, font: FONT },
          encoding: { x: { field: 'x', type: 'quantitative' }, y: { field: 'y', type: 'quantitative' }, text: { field: 'label' } },
        },
      );
    }
    for (const guide of panel.guides ?? []) {
      layers.push(
        { data: { values: [guide] }, mark: { type: 'rule', color: GUIDE, strokeDash: [4, 4], strokeWidth: 1 }, encoding: { y: { field: 'y', type: 'quantitative' } } },
        {
          data: { values: [{ ...guide, x: 0 }] },
          mark: { type: 'text', align: 'left', baseline: 'bottom', dx: 4, dy: -3, color: GUIDE, fontSize: 11, font: FONT },
          encoding: { x: { field: 'x', type: 'quantitative' }, y: { field: 'y', type: 'quantitative' }, text: { field: 'label' } },
        },
      );
    }
    layers.push(
      { mark: { type: 'rule', strokeWidth: 1.5, opacity: 0.55 }, encoding: { x, y: { field: 'min', type: 'quantitative' }, y2: { field: 'max' }, color } },
      { mark: { type: 'line', strokeWidth: 2.5, interpolate: 'linear' }, encoding: { x, y, color, strokeDash } },
      {
        mark: { type: 'point', filled: true, size: 45, opacity: 1 },
        encoding: {
          x,
          y,
          color,
          tooltip: [{ field: 'series' }, { field: 'x', title: 'x', format: ',' }, { field: 'y', title: 'median', format: ',.1f' }, { field: 'min', format: ',.1f' }, { field: 'max', format: ',.1f' }],
        },
      },
    );
    return { title: { text: panel.title, anchor: 'start' as const, fontSize: 13 }, width, height, data: { values: rows }, layer: layers };
  });

  const spacing = 40;
  const subtitle = options.subtitle === undefined ? undefined : wrap([options.subtitle].flat(), panels.length * (width + 80) + (panels.length - 1) * spacing, SUBTITLE_SIZE);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: options.title, subtitle, anchor: 'start', fontSize: 16, subtitleFontSize: SUBTITLE_SIZE, subtitleColor: '#444', subtitlePadding: 6, offset: 16 },
    background: 'white',
    padding: 16,
    hconcat: panels,
    spacing,
    resolve: { scale: { color: 'shared', strokeDash: 'shared', y: 'independent' } },
    config: {
      font: FONT,
      axis: { labelFontSize: 11, titleFontSize: 12, titleFontWeight: 'normal', titleColor: '#333', labelColor: '#333', gridColor: '#e6e6e6', domainColor: '#888', tickColor: '#888' },
      legend: { labelFontSize: 12, symbolOpacity: 1 },
      view: { stroke: '#ccc' },
    },
  } as TopLevelSpec;
}

/** The chart as SVG text. */
export async function renderChart(options: ChartOptions): Promise<string> {
  const logger = vega.logger(vega.Error);
  const view = new vega.View(vega.parse(compile(chartSpec(options), { logger }).spec), { renderer: 'none', logLevel: vega.Error });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Renders the chart and writes it to `file` (folders made as needed); returns the file. */
export async function writeChart(file: string, options: ChartOptions): Promise<string> {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, await renderChart(options));
  return file;
}
