
(function () {
  var slides = Array.prototype.slice.call(document.querySelectorAll('.slide'));
  var counter = document.getElementById('counter');
  var cur = 0;
  function room(el) {  // the height a box offers its content, in layout pixels
    var cs = getComputedStyle(el);
    var h = cs.maxHeight === 'none' ? el.clientHeight : parseFloat(cs.maxHeight);
    return h - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
  }
  function need(el) {  // the height its content takes, in layout pixels
    var r = document.createRange();
    r.selectNodeContents(el);
    var zoom = el.getBoundingClientRect().height / (el.offsetHeight || 1) || 1;
    return r.getBoundingClientRect().height / zoom;
  }
  function fit(el, min) {  // smaller type until the text fits, with a tenth to spare:
    el.style.fontSize = '';  // print lays text out a little wider than the screen
    var size = parseFloat(getComputedStyle(el).fontSize);
    while ((need(el) > 0.9 * room(el) || el.scrollWidth > el.clientWidth + 1) && size > min) {
      size = Math.max(min, size - 1);
      el.style.fontSize = size + 'px';
    }
  }
  function trimTable(wrap) {  // a table keeps the rows that fit and says how many
    var rows = wrap.querySelectorAll('tbody tr'), n = rows.length, shown = n;
    rows.forEach(function (r) { r.style.display = ''; });
    while (wrap.scrollHeight > wrap.clientHeight + 1 && shown > 1) {
      rows[--shown].style.display = 'none';
    }
    var note = wrap.parentNode.querySelector('p.rows');
    var total = note ? parseInt(note.dataset.total, 10) : n;
    if (note) { note.textContent = shown < total
      ? 'First ' + shown + ' of ' + total + ' rows; the report has them all.' : ''; }
  }
  function layout() {
    var print = window.matchMedia('print').matches;
    if (document.body.hasAttribute('data-paper')) {  // laid out as printed, whatever the window
      document.documentElement.style.setProperty('--k', '1.1024');
      document.documentElement.style.setProperty('--w', '1018px');
    } else if (!print) {
      var w = window.innerWidth, h = window.innerHeight;
      var k = Math.min(h / 720, w / 960);
      document.documentElement.style.setProperty('--k', String(k));
      document.documentElement.style.setProperty('--w', Math.max(960, w / k) + 'px');
    }
    slides.forEach(function (s) {
      s.querySelectorAll('h1').forEach(function (e) { fit(e, 16); });
      s.querySelectorAll('.takeaway').forEach(function (e) { fit(e, 9); });
      s.querySelectorAll('.box, .note, .appendix-body').forEach(function (e) { fit(e, 11); });
      s.querySelectorAll('.evidence').forEach(function (e) { fit(e, 10); });
      s.querySelectorAll('.tablewrap').forEach(function (e) { fit(e, 12); trimTable(e); });
    });
    var charts = window.Plotly ? document.querySelectorAll('.js-plotly-plot') : [];
    return Promise.all(Array.prototype.map.call(charts, function (g) {
      return Plotly.Plots.resize(g);
    }));  // resolves when every chart is redrawn at its new size
  }
  function show(i) {
    cur = Math.max(0, Math.min(slides.length - 1, i));
    slides.forEach(function (s, j) { s.classList.toggle('active', j === cur); });
    counter.textContent = (cur + 1) + ' / ' + slides.length;
    document.getElementById('prev').disabled = cur === 0;
    document.getElementById('next').disabled = cur === slides.length - 1;
    document.body.setAttribute('data-slide', String(cur + 1));
    try { history.replaceState(null, '', '#' + (cur + 1)); } catch (e) {}
  }
  window.ulrShow = show;
  window.ulrLayout = layout;
  document.getElementById('prev').onclick = function () { show(cur - 1); };
  document.getElementById('next').onclick = function () { show(cur + 1); };
  document.addEventListener('keydown', function (e) {
    if (['ArrowRight', 'PageDown', ' '].indexOf(e.key) >= 0) { show(cur + 1); e.preventDefault(); }
    else if (['ArrowLeft', 'PageUp'].indexOf(e.key) >= 0) { show(cur - 1); e.preventDefault(); }
    else if (e.key === 'Home') { show(0); } else if (e.key === 'End') { show(slides.length - 1); }
  });
  window.addEventListener('resize', layout);
  window.addEventListener('beforeprint', layout);
  window.addEventListener('afterprint', layout);
  var pm = window.matchMedia('print');
  if (pm.addEventListener) { pm.addEventListener('change', layout); }
  if (document.body.hasAttribute('data-embedded')) {
    try {  // inside the app: arrow keys work without clicking into the frame first
      var host = window.parent.document;
      if (host.__ulrDeckKeys) { host.removeEventListener('keydown', host.__ulrDeckKeys); }
      host.__ulrDeckKeys = function (e) {
        var t = e.target && e.target.tagName;
        if (t === 'INPUT' || t === 'TEXTAREA') { return; }
        if (e.key === 'ArrowRight' || e.key === 'PageDown') { show(cur + 1); e.preventDefault(); }
        else if (e.key === 'ArrowLeft' || e.key === 'PageUp') { show(cur - 1); e.preventDefault(); }
      };
      host.addEventListener('keydown', host.__ulrDeckKeys);
    } catch (e) {}
  }
  layout();
  var start = parseInt((location.hash || '#1').slice(1), 10);
  show(isNaN(start) ? 0 : start - 1);
  document.body.setAttribute('data-ready', '1');
  window.focus();
})();
