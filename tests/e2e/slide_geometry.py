"""What a slide looks like, measured in the browser: overlaps, clipping, the chart's share.

``MEASURE_JS`` runs in a page of the exported deck and returns, for every slide,
``{"slide": n, "chart": share of the slide's height or None, "problems": [...]}``.
A problem is a sentence naming the text involved:

- two text boxes overlap (HTML text of the slide and every label plotly drew);
- text lies outside the slide;
- a box clips its text (``scrollHeight > clientHeight``);
- a chart toolbar is visible.
"""

MEASURE_JS = r"""() => {
  const TEXT = 'h1, h2, p, li, th, td, .caveats > b, .stale, .note';
  const BOXES = 'h1, .takeaway, .box, .evidence, .note, .tablewrap, .appendix-body';
  const slides = Array.from(document.querySelectorAll('.slide'));
  const print = window.matchMedia('print').matches;
  const out = [];
  const name = (e) => (e.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 50);
  const visible = (r) => r.width > 0.5 && r.height > 0.5;
  slides.forEach((s, i) => {
    if (!print && window.ulrShow) { window.ulrShow(i); }
    const sr = s.getBoundingClientRect();
    const problems = [];
    const items = [];
    s.querySelectorAll(TEXT).forEach((e) => {
      if (!name(e) || e.closest('aside.notes')) { return; }
      if (e.querySelector(TEXT)) { return; }  // a container: its own text boxes count
      const range = document.createRange();
      range.selectNodeContents(e);
      const r = range.getBoundingClientRect();  // the text itself, not the block
      if (visible(r)) { items.push({e, r, what: e.tagName.toLowerCase() + ' "' + name(e) + '"'}); }
    });
    s.querySelectorAll('.main-svg text').forEach((e) => {
      if (!name(e) || getComputedStyle(e).display === 'none') { return; }
      if (e.closest('.hoverlayer')) { return; }
      if (e.getAttribute('opacity') === '0' || getComputedStyle(e).opacity === '0') { return; }
      const r = e.getBoundingClientRect();
      if (visible(r)) { items.push({e, r, what: 'chart text "' + name(e) + '"'}); }
    });
    const tol = 1;
    items.forEach((a, j) => {
      const r = a.r;
      if (r.left < sr.left - tol || r.right > sr.right + tol || r.top < sr.top - tol
          || r.bottom > sr.bottom + tol) {
        problems.push('outside the slide: ' + a.what);
      }
      for (let k = j + 1; k < items.length; k++) {
        const b = items[k];
        if (a.e.contains(b.e) || b.e.contains(a.e)) { continue; }
        const w = Math.min(r.right, b.r.right) - Math.max(r.left, b.r.left);
        const h = Math.min(r.bottom, b.r.bottom) - Math.max(r.top, b.r.top);
        if (w > 2 && h > 2) { problems.push('overlap: ' + a.what + ' / ' + b.what); }
      }
    });
    s.querySelectorAll(BOXES).forEach((e) => {
      if (e.scrollHeight > e.clientHeight + 1 || e.scrollWidth > e.clientWidth + 1) {
        problems.push('clipped: ' + e.className + ' "' + name(e) + '" ' + e.scrollHeight
                      + ' > ' + e.clientHeight);
      }
    });
    s.querySelectorAll('.modebar-container, .modebar').forEach((e) => {
      const r = e.getBoundingClientRect();
      if (visible(r) && getComputedStyle(e).display !== 'none'
          && getComputedStyle(e).visibility !== 'hidden') {
        problems.push('chart toolbar visible');
      }
    });
    const c = s.querySelector('.chart');
    out.push({slide: i + 1, chart: c ? c.getBoundingClientRect().height / sr.height : null,
              problems});
  });
  if (!print && window.ulrShow) { window.ulrShow(0); }
  return out;
}"""
