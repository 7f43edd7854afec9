// addsim viewer (docs/viewer.md): plays an embedded trajectory with three.js and plots the
// run's per-step reports. Data: window.ADDSIM_DATA (meta.json, steps.csv, energies.csv,
// summary.json, plots.json) and window.ADDSIM_FRAMES (base64 Float32, one row of the drawn
// coordinates per kept state). URL options (query or hash): frame=N shows kept state N
// (negative: from the end) paused; play=0 starts paused.
(function () {
  'use strict';

  const D = window.ADDSIM_DATA;
  const meta = D.meta;
  const errorsBox = document.getElementById('errors');
  function showError(message) {
    errorsBox.hidden = false;
    errorsBox.textContent += (errorsBox.textContent ? '\n' : '') + message;
  }
  let errorCount = 0;
  window.addEventListener('error', (e) => { ++errorCount; showError(String(e.message)); });
  const consoleError = console.error.bind(console);
  console.error = (...args) => { ++errorCount; consoleError(...args); };

  const query = new URLSearchParams(location.search);
  for (const [k, v] of new URLSearchParams(location.hash.replace(/^#/, ''))) query.set(k, v);

  // ---- trajectory -------------------------------------------------------------------------
  const columns = D.columns;
  const ncols = columns.length;
  const states = D.states;
  const nframes = states.length;
  const frames = (function decode(text) {
    const bin = atob(text);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; ++i) bytes[i] = bin.charCodeAt(i);
    return new Float32Array(bytes.buffer);
  })(window.ADDSIM_FRAMES);
  const colOf = new Int32Array(meta.num_dofs).fill(-1);
  columns.forEach((d, i) => { colOf[d] = i; });
  const dt = meta.dt;
  const tEnd = nframes > 0 ? states[nframes - 1] * dt : 0;
  const palette = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f',
                   '#86bcb6', '#d37295', '#8cd17d'];
  const bodyColor = (k) => palette[k % palette.length];

  // Frame position for time t: kept state k and the fraction a towards k + 1.
  function locate(t) {
    if (nframes <= 1) return { k: 0, a: 0 };
    const s = t / dt;
    let lo = 0, hi = nframes - 1;
    if (s >= states[hi]) return { k: hi, a: 0 };
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (states[mid] <= s) lo = mid; else hi = mid;
    }
    return { k: lo, a: Math.min(1, Math.max(0, (s - states[lo]) / (states[hi] - states[lo]))) };
  }
  // Coordinate of global DOF d at kept state k.
  const value = (k, d) => frames[k * ncols + colOf[d]];

  // ---- side panel -------------------------------------------------------------------------
  const summary = D.summary || {};
  document.getElementById('title').textContent = summary.scene || 'addsim run';
  (function info() {
    const rows = [];
    const fmt = (x, unit) => (x === undefined || x === null ? '' : String(+(+x).toPrecision(4)) + (unit || ''));
    if (summary.steps_requested !== undefined)
      rows.push(['steps', `${summary.steps_completed} of ${summary.steps_requested}, dt = ${fmt(summary.dt, ' s')}`]);
    if (summary.integrator) rows.push(['integrator', `${summary.integrator}, ${summary.contact_model} contact, ${summary.linear_solver}`]);
    if (summary.wall_time_s !== undefined)
      rows.push(['wall time', `${fmt(summary.wall_time_s, ' s')}, ${summary.newton_iterations_total} Newton iterations`]);
    rows.push(['bodies', String(meta.bodies.length) + ` (${meta.num_dofs} DOFs)`]);
    rows.push(['shown', `${nframes} of ${D.states_stored} states` + (nframes < D.states_stored ? ' (decimated)' : '')]);
    // Long runs: the plotted series are min/max per bucket of steps (the CSV files are complete).
    for (const [name, file] of [['steps', 'steps.csv'], ['energies', 'energies.csv']]) {
      const s = D[name];
      if (s && s.bucket > 1)
        rows.push(['plots', `${file}: min and max of every ${s.bucket} rows (${s.rows} rows, decimated)`]);
    }
    const table = document.createElement('table');
    for (const [k, v] of rows) {
      const tr = table.insertRow();
      tr.insertCell().textContent = k;
      tr.insertCell().textContent = v;
    }
    if (summary.completed === false) {
      const tr = table.insertRow();
      tr.insertCell().textContent = 'failed';
      const td = tr.insertCell();
      td.className = 'failed';
      td.textContent = `step ${summary.failed_step}: ${summary.failure}`;
    }
    document.getElementById('info').appendChild(table);
  })();

  // ---- plots (canvas, drawn here) ---------------------------------------------------------
  const plots = [];
  function niceTicks(lo, hi, count) {
    if (!(hi > lo)) { hi = lo + 1; lo -= 1; }
    const raw = (hi - lo) / count;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
    const ticks = [];
    for (let x = Math.ceil(lo / step) * step; x <= hi + 1e-9 * step; x += step) ticks.push(+x.toPrecision(12));
    return ticks;
  }
  const tickLabel = (x) => (Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-2 && x !== 0) ? x.toExponential(0) : String(+x.toPrecision(4)));

  // spec: {title, x: [..], xlabel, series: [{name, y: [..], color}], log, time (x is time: cursor + click to seek)}
  function addPlot(spec) {
    const box = document.createElement('div');
    box.className = 'plot';
    const canvas = document.createElement('canvas');
    const cursor = document.createElement('canvas');
    cursor.className = 'cursor';
    box.append(canvas, cursor);
    document.getElementById('plots').appendChild(box);
    const plot = { spec, canvas, cursor, frame: null };
    plots.push(plot);
    if (spec.time) {
      canvas.style.cursor = 'crosshair';
      canvas.addEventListener('click', (e) => {
        const f = plot.frame;
        if (!f) return;
        const r = canvas.getBoundingClientRect();
        const x = f.x0 + ((e.clientX - r.left) - f.left) / (f.right - f.left) * (f.x1 - f.x0);
        setTime(Math.min(tEnd, Math.max(0, x)));
        setPlaying(false);
      });
    }
    drawPlot(plot);
  }

  function drawPlot(plot) {
    const { spec, canvas, cursor } = plot;
    const w = canvas.clientWidth || 350, h = canvas.clientHeight || 150;
    const ratio = window.devicePixelRatio || 1;
    for (const c of [canvas, cursor]) {
      c.width = Math.round(w * ratio);
      c.height = Math.round(h * ratio);
    }
    const g = canvas.getContext('2d');
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, w, h);
    const tf = spec.log ? (y) => (y > 0 ? Math.log10(y) : null) : (y) => y;
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const x of spec.x) if (x !== null) { x0 = Math.min(x0, x); x1 = Math.max(x1, x); }
    for (const s of spec.series)
      for (const y of s.y) {
        const v = y === null ? null : tf(y);
        if (v !== null && isFinite(v)) { y0 = Math.min(y0, v); y1 = Math.max(y1, v); }
      }
    if (!isFinite(x0)) { x0 = 0; x1 = 1; }
    if (x1 === x0) x1 = x0 + 1;
    if (!isFinite(y0)) { y0 = 0; y1 = 1; }
    if (y1 === y0) { y0 -= spec.log ? 0.5 : Math.abs(y0) * 0.1 + 1; y1 += spec.log ? 0.5 : Math.abs(y1) * 0.1 + 1; }
    const pad = (y1 - y0) * 0.05;
    y0 -= pad; y1 += pad;
    const left = 48, right = w - 8, top = 20, bottom = h - 22;
    const X = (x) => left + (x - x0) / (x1 - x0) * (right - left);
    const Y = (y) => bottom - (y - y0) / (y1 - y0) * (bottom - top);
    plot.frame = { left, right, top, bottom, x0, x1, X };
    g.font = '11px system-ui, sans-serif';
    g.fillStyle = '#222';
    g.textBaseline = 'top';
    g.fillText(spec.title, left, 3);
    g.strokeStyle = '#ddd';
    g.fillStyle = '#666';
    g.lineWidth = 1;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    const yticks = spec.log ? niceTicks(Math.floor(y0), Math.ceil(y1), 4).filter((v) => Number.isInteger(v) && v >= y0 && v <= y1)
                            : niceTicks(y0, y1, 4);
    for (const v of yticks) {
      g.beginPath(); g.moveTo(left, Y(v)); g.lineTo(right, Y(v)); g.stroke();
      g.fillText(spec.log ? '1e' + v : tickLabel(v), left - 4, Y(v));
    }
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (const v of niceTicks(x0, x1, 5)) {
      g.beginPath(); g.moveTo(X(v), top); g.lineTo(X(v), bottom); g.stroke();
      g.fillText(tickLabel(v), X(v), bottom + 3);
    }
    if (spec.xlabel) { g.textAlign = 'left'; g.textBaseline = 'top'; g.fillText(spec.xlabel, 4, bottom + 3); }
    g.strokeStyle = '#999';
    g.strokeRect(left, top, right - left, bottom - top);
    g.save();
    g.beginPath(); g.rect(left, top, right - left, bottom - top); g.clip();
    spec.series.forEach((s, i) => {
      g.strokeStyle = s.color || palette[i % palette.length];
      g.lineWidth = 1.5;
      g.beginPath();
      let pen = false;
      for (let j = 0; j < spec.x.length; ++j) {
        const v = s.y[j] === null ? null : tf(s.y[j]);
        if (v === null || !isFinite(v) || spec.x[j] === null) { pen = false; continue; }
        if (pen) g.lineTo(X(spec.x[j]), Y(v)); else g.moveTo(X(spec.x[j]), Y(v));
        pen = true;
      }
      g.stroke();
      if (spec.x.length <= 60) {
        g.fillStyle = g.strokeStyle;
        for (let j = 0; j < spec.x.length; ++j) {
          const v = s.y[j] === null ? null : tf(s.y[j]);
          if (v !== null && isFinite(v)) g.fillRect(X(spec.x[j]) - 1.5, Y(v) - 1.5, 3, 3);
        }
      }
    });
    g.restore();
    if (spec.series.length > 1) {
      g.textAlign = 'left';
      g.textBaseline = 'top';
      g.font = '11px system-ui, sans-serif';
      let lx = left + g.measureText(spec.title).width + 12;
      const ly = 3;
      spec.series.forEach((s, i) => {
        g.fillStyle = s.color || palette[i % palette.length];
        g.fillRect(lx, ly + 3, 10, 3);
        g.fillStyle = '#333';
        g.fillText(s.name, lx + 13, ly);
        lx += 18 + g.measureText(s.name).width;
      });
    }
    drawCursor(plot);
  }

  // A table of plots.json ({title, columns: [..], rows: [[..], ..]}), e.g. gradient components;
  // numbers are shown with 6 significant digits.
  function addTable(spec) {
    const box = document.createElement('div');
    box.className = 'plot-table';
    const title = document.createElement('div');
    title.className = 'plot-title';
    title.textContent = spec.title || '';
    const table = document.createElement('table');
    const head = table.createTHead().insertRow();
    for (const c of spec.columns || []) head.appendChild(document.createElement('th')).textContent = c;
    const body = table.createTBody();
    for (const row of spec.rows) {
      const tr = body.insertRow();
      for (const v of row) {
        const td = tr.insertCell();
        td.textContent = typeof v === 'number' ? String(+v.toPrecision(6)) : v === null ? '–' : String(v);
        if (typeof v === 'number') td.className = 'num';
      }
    }
    box.append(title, table);
    document.getElementById('plots').appendChild(box);
  }

  function drawCursor(plot) {
    const { cursor, frame, spec } = plot;
    const g = cursor.getContext('2d');
    const ratio = window.devicePixelRatio || 1;
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, cursor.width, cursor.height);
    if (!spec.time || !frame) return;
    const x = frame.X(time);
    g.strokeStyle = 'rgba(200, 30, 30, 0.8)';
    g.lineWidth = 1;
    g.beginPath(); g.moveTo(x, frame.top); g.lineTo(x, frame.bottom); g.stroke();
  }

  function buildPlots() {
    const steps = D.steps && D.steps.columns;
    if (steps && steps.step && steps.step.length) {
      const t = steps.time;
      addPlot({ title: 'Newton iterations per step', xlabel: 't (s)', x: t, time: true,
                series: [{ name: 'iterations', y: steps.newton_iterations },
                         ...(steps.line_search_halvings ? [{ name: 'halvings', y: steps.line_search_halvings }] : [])] });
      addPlot({ title: 'final residual ‖r‖ per step (N)', xlabel: 't (s)', x: t, time: true, log: true,
                series: [{ name: '‖r‖', y: steps.residual_norm }] });
    }
    const energies = D.energies && D.energies.columns;
    if (energies && energies.time && energies.time.length) {
      const names = D.energies.header.filter((c) => c !== 'step' && c !== 'time' && c !== 'contact_points');
      addPlot({ title: 'energy (J)', xlabel: 't (s)', x: energies.time, time: true,
                series: names.map((n, i) => ({ name: n, y: energies[n], color: n === 'total' ? '#222' : palette[i % palette.length] })) });
      if (energies.contact_points) {
        addPlot({ title: 'contact points (gap < 0)', xlabel: 't (s)', x: energies.time, time: true,
                  series: [{ name: 'contacts', y: energies.contact_points }] });
      }
    }
    if (steps && steps.wall_ms && steps.wall_ms.length)
      addPlot({ title: 'wall time per step (ms)', xlabel: 't (s)', x: steps.time, time: true, series: [{ name: 'ms', y: steps.wall_ms }] });
    for (const p of D.plots || []) {
      if (p.rows) { addTable(p); continue; }
      addPlot({ title: p.title || '', xlabel: p.x_label || '', x: p.x, log: !!p.y_log, time: false,
                series: (p.series || []).map((s) => ({ name: s.name, y: s.y })) });
    }
  }

  // ---- 3D scene ---------------------------------------------------------------------------
  let time = 0;
  let playing = query.get('play') !== '0' && !query.has('frame');
  let speed = 1;
  let needsRender = true;
  const view = document.getElementById('view');
  const notice = document.getElementById('notice');
  let world = null;  // three.js state, null without three.js or WebGL

  function showNotice(html) {
    notice.hidden = false;
    notice.innerHTML = html;
  }

  function escapeHtml(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  }

  function quatFromRotationVector(THREE, x, y, z, out) {
    const angle = Math.hypot(x, y, z);
    if (angle < 1e-12) return out.set(0.5 * x, 0.5 * y, 0.5 * z, 1).normalize();
    const s = Math.sin(0.5 * angle) / angle;
    return out.set(s * x, s * y, s * z, Math.cos(0.5 * angle));
  }

  function rigidGeometry(THREE, shape) {
    let geo;
    switch (shape.type) {
      case 'box': geo = new THREE.BoxGeometry(shape.size[0], shape.size[1], shape.size[2]); break;
      case 'sphere': geo = new THREE.SphereGeometry(shape.radius, 32, 16); break;
      case 'cylinder': geo = new THREE.CylinderGeometry(shape.radius, shape.radius, shape.length, 32).rotateX(Math.PI / 2); break;
      case 'capsule': geo = new THREE.CapsuleGeometry(shape.radius, shape.length, 8, 24).rotateX(Math.PI / 2); break;
      case 'mesh': {
        geo = new THREE.BufferGeometry();
        geo.setAttribute('position', new THREE.Float32BufferAttribute(shape.vertices.flat(), 3));
        geo.setIndex(shape.triangles.flat());
        geo.computeVertexNormals();
        break;
      }
      default: throw new Error('unknown rigid shape ' + shape.type);
    }
    return geo;
  }

  function buildWorld(THREE) {
    let renderer;
    try {
      renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
    } catch (e) {
      showNotice('WebGL is not available in this browser, so the 3D view is off (' + escapeHtml(e.message) + '). The plots still work.');
      return null;
    }
    const background = new THREE.Color(0xe9edf2);
    renderer.setClearColor(background);
    renderer.setPixelRatio(window.devicePixelRatio || 1);
    view.insertBefore(renderer.domElement, view.firstChild);
    const scene = new THREE.Scene();
    const camera = new THREE.PerspectiveCamera(35, 1, 0.01, 1000);
    camera.up.set(0, 0, 1);
    scene.add(new THREE.HemisphereLight(0xffffff, 0x8090a0, 1.6));
    const sun = new THREE.DirectionalLight(0xffffff, 1.8);
    sun.position.set(0.4, -0.6, 1.0);
    scene.add(sun);
    const fill = new THREE.DirectionalLight(0xffffff, 0.5);
    fill.position.set(-0.6, 0.5, 0.3);
    scene.add(fill);

    const W = { THREE, renderer, scene, camera, background, items: [], rigid: [], lineGroups: [], edges: [], proxies: [], legend: [] };
    const q = new Float32Array(meta.num_dofs);  // drawn coordinates at the current time (others stay 0)
    W.q = q;
    const x3 = (d, out) => out.set(q[d], q[d + 1], q[d + 2]);

    // Scene extent over all kept states: points, FEM surface nodes, rigid centres, handles.
    const box = new THREE.Box3();
    const tmp = new THREE.Vector3();
    meta.bodies.forEach((b) => {
      const g = b.geometry || {};
      const pad = g.kind === 'rigid' ? rigidRadius(g.shape) : 0;
      const nodes = g.kind === 'fem' ? [...new Set(g.surface_triangles.flat())] : g.kind === 'rigid' ? [0] : [...Array(b.dof_count / 3).keys()];
      for (let k = 0; k < nframes; ++k)
        for (const n of nodes) {
          const d = b.dof_offset + 3 * n;
          tmp.set(value(k, d), value(k, d + 1), value(k, d + 2));
          box.expandByPoint(tmp.clone().addScalar(pad));
          box.expandByPoint(tmp.addScalar(-pad));
        }
    });
    for (const h of meta.handles || []) for (const p of h.positions || []) box.expandByPoint(tmp.set(p[0], p[1], p[2]));
    if (box.isEmpty()) box.set(new THREE.Vector3(-0.5, -0.5, -0.5), new THREE.Vector3(0.5, 0.5, 0.5));
    const center = box.getCenter(new THREE.Vector3());
    const size = Math.max(box.getSize(new THREE.Vector3()).length(), 0.05);
    W.box = box; W.center = center; W.size = size;
    camera.near = size * 1e-3;
    camera.far = size * 100;

    function rigidRadius(shape) {
      switch (shape.type) {
        case 'box': return 0.5 * Math.hypot(...shape.size);
        case 'sphere': return shape.radius;
        case 'cylinder': case 'capsule': return shape.radius + 0.5 * shape.length;
        case 'mesh': return Math.max(...shape.vertices.map((v) => Math.hypot(...v)));
        default: return 0;
      }
    }

    const dot = new THREE.SphereGeometry(1, 12, 8);
    // Small spheres at points given by dof indices; returns an item updated per frame.
    function pointCloud(dofs, radius, color, name) {
      const mesh = new THREE.InstancedMesh(dot, new THREE.MeshStandardMaterial({ color, roughness: 0.5 }), dofs.length);
      const m = new THREE.Matrix4();
      return { object: mesh, name, update() {
        for (let i = 0; i < dofs.length; ++i) {
          m.makeScale(radius, radius, radius).setPosition(q[dofs[i]], q[dofs[i] + 1], q[dofs[i] + 2]);
          mesh.setMatrixAt(i, m);
        }
        mesh.instanceMatrix.needsUpdate = true;
        mesh.computeBoundingSphere();
      } };
    }
    // A deforming triangle surface over node dofs.
    function surface(nodeDofs, triangles, color, name) {
      const geo = new THREE.BufferGeometry();
      const pos = new Float32Array(3 * nodeDofs.length);
      geo.setAttribute('position', new THREE.BufferAttribute(pos, 3));
      geo.setIndex(triangles);
      const mesh = new THREE.Mesh(geo, new THREE.MeshStandardMaterial({ color, roughness: 0.55, metalness: 0.0, side: THREE.DoubleSide }));
      const wire = new THREE.Mesh(geo, new THREE.MeshBasicMaterial({ color: 0x000000, wireframe: true, transparent: true, opacity: 0.25 }));
      wire.visible = false;
      mesh.add(wire);
      W.edges.push(wire);
      return { object: mesh, name, update() {
        for (let i = 0; i < nodeDofs.length; ++i) {
          const d = nodeDofs[i];
          pos[3 * i] = q[d]; pos[3 * i + 1] = q[d + 1]; pos[3 * i + 2] = q[d + 2];
        }
        geo.attributes.position.needsUpdate = true;
        geo.computeVertexNormals();
        geo.computeBoundingSphere();
      } };
    }

    meta.bodies.forEach((b, k) => {
      const g = b.geometry || {};
      const color = new THREE.Color(bodyColor(k));
      const group = { name: b.name, color: bodyColor(k), objects: [], items: [] };
      const add = (item) => { W.items.push(item); group.objects.push(item.object); scene.add(item.object); };
      if (g.kind === 'fem') {
        const nodes = [...new Set(g.surface_triangles.flat())];
        const local = new Map(nodes.map((n, i) => [n, i]));
        add(surface(nodes.map((n) => b.dof_offset + 3 * n), g.surface_triangles.flat().map((n) => local.get(n)), color, b.name));
      } else if (g.kind === 'sheet' || g.kind === 'points') {
        const dofs = [...Array(g.count).keys()].map((i) => b.dof_offset + 3 * i);
        if (g.kind === 'sheet') add(surface(dofs, g.triangles.flat(), color, b.name));
        add(pointCloud(dofs, size * (g.kind === 'sheet' ? 0.004 : 0.012), g.kind === 'sheet' ? color.clone().multiplyScalar(0.6) : color, b.name));
      } else if (g.kind === 'rigid') {
        const node = new THREE.Group();
        // Coarse mesh shapes (a few hundred triangles) look right with flat faces, not smoothed normals.
        const coarse = g.shape.type === 'mesh' && g.shape.triangles.length < 500;
        const material = new THREE.MeshStandardMaterial({ color, roughness: 0.5, metalness: 0.05, flatShading: coarse,
                                                          transparent: g.kinematic, opacity: g.kinematic ? 0.6 : 1 });
        const mesh = new THREE.Mesh(rigidGeometry(THREE, g.shape), material);
        node.add(mesh);
        const wire = new THREE.Mesh(mesh.geometry, new THREE.MeshBasicMaterial({ color: 0x000000, wireframe: true, transparent: true, opacity: 0.25 }));
        wire.visible = false;
        node.add(wire);
        W.edges.push(wire);
        const proxyMaterial = new THREE.MeshStandardMaterial({ color: 0x333333, transparent: true, opacity: 0.45, depthWrite: false });
        for (const p of g.proxies || []) {
          const r = p.radius > 0 ? p.radius : size * 0.004;
          for (const c of p.centers) {
            const s = new THREE.Mesh(dot, proxyMaterial);
            s.scale.setScalar(r * (p.radius > 0 ? 1.01 : 1));
            s.position.set(c[0], c[1], c[2]);
            node.add(s);
            W.proxies.push(s);
          }
        }
        const d = b.dof_offset;
        const pose = { position: new THREE.Vector3(), quaternion: new THREE.Quaternion() };
        W.rigid[k] = pose;
        add({ object: node, name: b.name, rigidDof: d, update() {
          node.position.copy(pose.position);
          node.quaternion.copy(pose.quaternion);
        } });
      }
      W.legend.push(group);
    });

    // Handles: small cubes at their per-step positions.
    W.handles = (meta.handles || []).map((h) => {
      const mesh = new THREE.Mesh(new THREE.BoxGeometry(1, 1, 1), new THREE.MeshStandardMaterial({ color: 0xff7f0e }));
      mesh.scale.setScalar(size * 0.02);
      scene.add(mesh);
      return { mesh, positions: h.positions || [], at: new THREE.Vector3() };
    });
    if (W.handles.length) W.legend.push({ name: 'handles', color: '#ff7f0e', objects: W.handles.map((h) => h.mesh) });

    // Springs and joints: line segments between point references.
    const refPoint = (ref, out) => {
      if (ref.dofs) {
        out.set(0, 0, 0);
        ref.dofs.forEach((d, m) => { out.x += ref.weights[m] * q[d]; out.y += ref.weights[m] * q[d + 1]; out.z += ref.weights[m] * q[d + 2]; });
      } else if (ref.rigid !== undefined) {
        const pose = W.rigid[ref.rigid];
        out.set(ref.point[0], ref.point[1], ref.point[2]).applyQuaternion(pose.quaternion).add(pose.position);
      } else if (ref.handle !== undefined) {
        out.copy(W.handles[ref.handle].at);
      } else {
        out.set(ref.world[0], ref.world[1], ref.world[2]);
      }
      return out;
    };
    for (const [list, color, name] of [[meta.springs || [], 0x444444, 'springs'], [meta.joints || [], 0xc0392b, 'joints']]) {
      if (!list.length) continue;
      const pos = new Float32Array(6 * list.length);
      const geo = new THREE.BufferGeometry();
      geo.setAttribute('position', new THREE.BufferAttribute(pos, 3));
      const lines = new THREE.LineSegments(geo, new THREE.LineBasicMaterial({ color, depthTest: name !== 'joints' }));
      lines.renderOrder = 1;
      scene.add(lines);
      const a = new THREE.Vector3(), c = new THREE.Vector3();
      W.lineGroups.push(lines);
      W.items.push({ object: lines, name, late: true, update() {
        list.forEach((s, i) => {
          refPoint(s.a, a); refPoint(s.b, c);
          pos.set([a.x, a.y, a.z, c.x, c.y, c.z], 6 * i);
        });
        geo.attributes.position.needsUpdate = true;
        geo.computeBoundingSphere();
      } });
    }

    // Joint anchors: small red spheres where joints sit on their first body.
    const joints = meta.joints || [];
    if (joints.length) {
      const markers = new THREE.InstancedMesh(dot, new THREE.MeshStandardMaterial({ color: 0xc0392b }), joints.length);
      const m = new THREE.Matrix4(), at = new THREE.Vector3();
      const r = size * 0.008;
      W.lineGroups.push(markers);
      W.items.push({ object: markers, name: 'joints', late: true, update() {
        joints.forEach((j, i) => {
          refPoint(j.a, at);
          markers.setMatrixAt(i, m.makeScale(r, r, r).setPosition(at));
        });
        markers.instanceMatrix.needsUpdate = true;
        markers.computeBoundingSphere();
      } });
      scene.add(markers);
    }
    // World axes at the origin (x red, y green, z blue).
    const axes = new THREE.AxesHelper(size * 0.08);
    scene.add(axes);

    // Obstacles: finite patches with a grid, centred under the scene.
    (meta.obstacles || []).forEach((o) => {
      const n = new THREE.Vector3(...o.normal).normalize();
      const p0 = new THREE.Vector3(...o.point);
      const c = center.clone().sub(n.clone().multiplyScalar(center.clone().sub(p0).dot(n)));
      const extent = Math.max(size * 1.5, 0.2);
      // Walls (planes not facing up) are see-through so that they hide nothing.
      const wall = Math.abs(n.z) < 0.7;
      const patch = new THREE.Mesh(new THREE.PlaneGeometry(extent, extent),
                                   new THREE.MeshStandardMaterial({ color: 0xc8ccd2, roughness: 0.9, side: THREE.DoubleSide,
                                                                    transparent: wall, opacity: wall ? 0.3 : 1, depthWrite: !wall,
                                                                    polygonOffset: true, polygonOffsetFactor: 1, polygonOffsetUnits: 1 }));
      const spacing = Math.pow(10, Math.floor(Math.log10(extent / 4)));
      const half = Math.floor(extent / 2 / spacing) * spacing;
      const grid = [];
      for (let x = -half; x <= half + 1e-9; x += spacing) grid.push(x, -extent / 2, 0, x, extent / 2, 0, -extent / 2, x, 0, extent / 2, x, 0);
      const gridGeo = new THREE.BufferGeometry();
      gridGeo.setAttribute('position', new THREE.Float32BufferAttribute(grid, 3));
      patch.add(new THREE.LineSegments(gridGeo, new THREE.LineBasicMaterial({ color: 0x9aa0a8 })));
      patch.quaternion.setFromUnitVectors(new THREE.Vector3(0, 0, 1), n);
      patch.position.copy(c);
      scene.add(patch);
      W.legend.push({ name: o.name || 'obstacle', color: '#c8ccd2', objects: [patch] });
    });

    // Orbit camera about a target: drag to rotate, right/shift-drag to pan, wheel to zoom.
    const orbit = { target: new THREE.Vector3(), azimuth: 0, elevation: 0, distance: 1 };
    W.orbit = orbit;
    // The default view looks from the front left and above, turned until the camera is on the
    // open side of every obstacle (not behind a wall).
    W.resetCamera = () => {
      orbit.target.copy(center);
      orbit.elevation = 0.38;
      orbit.distance = size / (2 * Math.tan(camera.fov * Math.PI / 360)) * 1.1;
      const planes = (meta.obstacles || []).map((o) => ({ n: new THREE.Vector3(...o.normal), p: new THREE.Vector3(...o.point) }));
      for (let turn = 0; turn < 8; ++turn) {
        orbit.azimuth = -Math.PI / 2 + 0.55 + turn * Math.PI / 4;
        placeCamera();
        if (planes.every((pl) => camera.position.clone().sub(pl.p).dot(pl.n) > 0)) break;
        if (turn === 7) orbit.azimuth = -Math.PI / 2 + 0.55;
      }
      placeCamera();
    };
    function placeCamera() {
      const ce = Math.cos(orbit.elevation);
      camera.position.set(orbit.target.x + orbit.distance * ce * Math.cos(orbit.azimuth),
                          orbit.target.y + orbit.distance * ce * Math.sin(orbit.azimuth),
                          orbit.target.z + orbit.distance * Math.sin(orbit.elevation));
      camera.lookAt(orbit.target);
      needsRender = true;
    }
    W.placeCamera = placeCamera;
    const el = renderer.domElement;
    let drag = null;
    el.addEventListener('contextmenu', (e) => e.preventDefault());
    el.addEventListener('pointerdown', (e) => {
      drag = { x: e.clientX, y: e.clientY, pan: e.button === 2 || e.shiftKey };
      el.setPointerCapture(e.pointerId);
    });
    el.addEventListener('pointerup', () => { drag = null; });
    el.addEventListener('pointermove', (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      drag.x = e.clientX; drag.y = e.clientY;
      if (drag.pan) {
        const scale = orbit.distance * 2 * Math.tan(camera.fov * Math.PI / 360) / el.clientHeight;
        const right = new THREE.Vector3().setFromMatrixColumn(camera.matrix, 0);
        const up = new THREE.Vector3().setFromMatrixColumn(camera.matrix, 1);
        orbit.target.addScaledVector(right, -dx * scale).addScaledVector(up, dy * scale);
      } else {
        orbit.azimuth -= dx * 0.008;
        orbit.elevation = Math.min(1.55, Math.max(-1.55, orbit.elevation + dy * 0.008));
      }
      placeCamera();
    });
    el.addEventListener('wheel', (e) => {
      e.preventDefault();
      orbit.distance *= Math.exp(e.deltaY * 0.001);
      placeCamera();
    }, { passive: false });
    el.addEventListener('dblclick', () => W.resetCamera());
    W.resetCamera();
    return W;
  }

  // Writes the drawn coordinates at time t into world.q and poses the rigid bodies.
  function sample(W, t) {
    const THREE = W.THREE;
    const { k, a } = locate(t);
    const k1 = Math.min(k + 1, nframes - 1);
    const q = W.q;
    for (let i = 0; i < ncols; ++i) q[columns[i]] = (1 - a) * frames[k * ncols + i] + a * frames[k1 * ncols + i];
    const qa = new THREE.Quaternion(), qb = new THREE.Quaternion();
    meta.bodies.forEach((b, j) => {
      const pose = W.rigid[j];
      if (!pose) return;
      const d = b.dof_offset;
      pose.position.set(q[d], q[d + 1], q[d + 2]);
      // Rotation vectors may switch chart between states (docs/rigid.md): interpolate rotations, not θ.
      quatFromRotationVector(THREE, value(k, d + 3), value(k, d + 4), value(k, d + 5), qa);
      quatFromRotationVector(THREE, value(k1, d + 3), value(k1, d + 4), value(k1, d + 5), qb);
      pose.quaternion.slerpQuaternions(qa, qb, a);
    });
    const step = states[k] + a * (states[k1] - states[k]);
    for (const h of W.handles) {
      if (!h.positions.length) continue;
      const i0 = Math.min(Math.floor(step), h.positions.length - 1), i1 = Math.min(i0 + 1, h.positions.length - 1);
      const f = step - Math.floor(step);
      h.at.set(...h.positions[i0]).lerp(new THREE.Vector3(...h.positions[i1]), f);
      h.mesh.position.copy(h.at);
    }
    for (const item of W.items) if (!item.late) item.update();
    for (const item of W.items) if (item.late) item.update();
  }

  function resize() {
    if (world) {
      const w = view.clientWidth, h = view.clientHeight;
      world.renderer.setSize(w, h, false);
      world.camera.aspect = w / Math.max(1, h);
      world.camera.updateProjectionMatrix();
    }
    for (const p of plots) drawPlot(p);
    needsRender = true;
  }

  // ---- controls ---------------------------------------------------------------------------
  const slider = document.getElementById('slider');
  const playButton = document.getElementById('play');
  const timeLabel = document.getElementById('time');
  function setPlaying(on) {
    playing = on && nframes > 1;
    playButton.innerHTML = playing ? '&#10074;&#10074;' : '&#9654;';
  }
  function setTime(t) {
    time = t;
    needsRender = true;
  }
  playButton.addEventListener('click', () => {
    if (!playing && time >= tEnd) time = 0;
    setPlaying(!playing);
  });
  slider.addEventListener('input', () => { setTime(tEnd * slider.value / 1000); setPlaying(false); });
  document.getElementById('speed').addEventListener('change', (e) => { speed = +e.target.value; });
  document.getElementById('reset-camera').addEventListener('click', () => world && world.resetCamera());
  const toggles = { 'show-edges': (on) => world.edges.forEach((o) => { o.visible = on; }),
                    'show-proxies': (on) => world.proxies.forEach((o) => { o.visible = on; }),
                    'show-lines': (on) => world.lineGroups.forEach((o) => { o.visible = on; }) };
  for (const [id, apply] of Object.entries(toggles))
    document.getElementById(id).addEventListener('change', (e) => { if (world) { apply(e.target.checked); needsRender = true; } });
  window.addEventListener('keydown', (e) => {
    if (e.target.tagName === 'INPUT' && e.target.type !== 'range') return;
    const { k } = locate(time);
    if (e.key === ' ') { e.preventDefault(); playButton.click(); }
    else if (e.key === 'ArrowRight') { setTime(states[Math.min(k + 1, nframes - 1)] * dt); setPlaying(false); }
    else if (e.key === 'ArrowLeft') { setTime(states[Math.max(k - (locate(time).a > 0 ? 0 : 1), 0)] * dt); setPlaying(false); }
  });

  function render() {
    slider.value = tEnd > 0 ? Math.round(1000 * time / tEnd) : 0;
    timeLabel.textContent = `t = ${time.toFixed(3)} s / ${tEnd.toFixed(3)} s`;
    for (const p of plots) drawCursor(p);
    if (!world) return;
    sample(world, time);
    world.renderer.render(world.scene, world.camera);
  }

  let last = null;
  function tick(now) {
    if (playing) {
      if (last !== null) time += speed * (now - last) / 1000;
      if (time >= tEnd) {
        if (document.getElementById('loop').checked) time = 0;
        else { time = tEnd; setPlaying(false); }
      }
      needsRender = true;
    }
    last = now;
    if (needsRender) { needsRender = false; render(); }
    requestAnimationFrame(tick);
  }

  // Where body k is drawn now (CSS pixels of the page) and its colour, for tests: the point of
  // its drawn geometry nearest to the geometry's centroid.
  function bodyMarkers() {
    if (!world) return [];
    const THREE = world.THREE;
    const rect = world.renderer.domElement.getBoundingClientRect();
    return world.legend.filter((g) => g.objects && meta.bodies.some((b) => b.name === g.name)).map((g) => {
      const pts = [];
      const v = new THREE.Vector3();
      for (const o of g.objects) {
        o.updateMatrixWorld(true);
        if (o.isInstancedMesh) {
          const m = new THREE.Matrix4();
          for (let i = 0; i < o.count; ++i) { o.getMatrixAt(i, m); pts.push(new THREE.Vector3().setFromMatrixPosition(m)); }
        } else if (o.isGroup) {
          const mesh = o.children[0];
          const box = new THREE.Box3().setFromObject(mesh);
          pts.push(box.getCenter(v).clone());
        } else if (o.geometry && o.geometry.attributes.position) {
          const a = o.geometry.attributes.position;
          for (let i = 0; i < a.count; ++i) pts.push(v.fromBufferAttribute(a, i).clone().applyMatrix4(o.matrixWorld));
        }
      }
      const c = pts.reduce((s, p) => s.add(p), new THREE.Vector3()).multiplyScalar(1 / Math.max(1, pts.length));
      const best = pts.reduce((b, p) => (!b || p.distanceTo(c) < b.distanceTo(c) ? p : b), null) || c;
      const s = best.clone().project(world.camera);
      return { name: g.name, color: g.color, x: rect.left + (s.x + 1) / 2 * rect.width, y: rect.top + (1 - s.y) / 2 * rect.height };
    });
  }

  function legend() {
    const box = document.getElementById('legend');
    if (!world) { box.hidden = true; return; }
    for (const g of world.legend) {
      const row = document.createElement('div');
      row.innerHTML = `<span style="background:${g.color}"></span>`;
      row.appendChild(document.createTextNode(g.name));
      row.addEventListener('click', () => {
        const on = row.classList.toggle('off');
        g.objects.forEach((o) => { o.visible = !on; });
        needsRender = true;
      });
      box.appendChild(row);
    }
  }

  // ---- start ------------------------------------------------------------------------------
  buildPlots();
  if (D.notice || typeof window.THREE === 'undefined') {
    showNotice('The 3D view needs three.js, which was not found when this page was written: ' + escapeHtml(D.notice || '') +
               '<br>Install it with <code>' + escapeHtml(D.install_command) + '</code> and regenerate the page with <code>addsim view DIR</code>.');
  } else if (nframes === 0) {
    showNotice('The trajectory has no states.');
  } else {
    world = buildWorld(window.THREE);
  }
  legend();
  if (query.has('frame') && nframes > 0) {
    let k = parseInt(query.get('frame'), 10) || 0;
    if (k < 0) k += nframes;
    time = states[Math.min(nframes - 1, Math.max(0, k))] * dt;
  }
  setPlaying(playing);
  window.addEventListener('resize', resize);
  resize();
  render();
  needsRender = false;
  // Reported once the page has its final size (after load, two frames later) and again after
  // every resize; the last report holds (tests read it from the console).
  function reportReady() {
    const report = { frame: locate(time).k, frames: nframes, time, webgl: !!world, errors: errorCount, bodies: bodyMarkers(),
                     plots: plots.map((p) => p.spec.title), tables: document.querySelectorAll('.plot-table tbody tr').length };
    window.ADDSIM_VIEWER = report;
    console.log('addsim-viewer: ready ' + JSON.stringify(report));
  }
  const afterLayout = () => requestAnimationFrame(() => requestAnimationFrame(reportReady));
  if (document.readyState === 'complete') afterLayout(); else window.addEventListener('load', afterLayout);
  window.addEventListener('resize', afterLayout);
  requestAnimationFrame(tick);
})();
