// The kafkalite console: topics, a partition's timeline, transactions and groups, live; the schema
// registry's subjects when the broker serves one.
// Every page subscribes to /api/stream/VIEW (server-sent events) and redraws on each snapshot.
import { Fragment, render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "./style.css";

const KINDS = {
  plain: "plain",
  idempotent: "idempotent",
  committed: "transactional, committed",
  aborted: "transactional, aborted",
  open: "transactional, still open",
  commit: "COMMIT marker",
  abort: "ABORT marker",
  control: "control batch",
};

function useStream(path) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    setData(null);
    setError(null);
    const source = new EventSource(path);
    source.onmessage = (e) => { setData(JSON.parse(e.data)); setError(null); };
    source.addEventListener("gone", (e) => { setError(JSON.parse(e.data)); source.close(); });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        fetch(path).then((r) => r.json()).then((j) => setError(j.error || "stream closed"), () => setError("broker unreachable"));
      }
    };
    return () => source.close();
  }, [path]);
  return [data, error];
}

function useHash() {
  const [hash, setHash] = useState(location.hash || "#/topics");
  useEffect(() => {
    const on = () => setHash(location.hash || "#/topics");
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => { const t = setInterval(() => setNow(Date.now()), ms); return () => clearInterval(t); }, [ms]);
  return now;
}

const fmtBytes = (n) => (n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / (1 << 20)).toFixed(1)} MiB`);
const fmtTime = (ms) => (ms > 0 ? new Date(ms).toISOString().replace("T", " ").replace("Z", "") : "–");
const fmtAge = (ms) => (ms == null ? "–" : ms < 1000 ? `${ms} ms` : ms < 120000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60000)} min`);
const enc = encodeURIComponent;

// "topic-3" -> a link to that partition's timeline
function TpLink({ tp }) {
  const i = tp.lastIndexOf("-");
  if (i < 0) return <span>{tp}</span>;
  return <a href={`#/partition/${enc(tp.slice(0, i))}/${tp.slice(i + 1)}`}>{tp}</a>;
}

const tpLinks = (tps) => (tps.length ? tps.map((tp, i) => <Fragment key={tp}>{i > 0 && ", "}<TpLink tp={tp} /></Fragment>) : "–");

function Loading({ error }) {
  return <p class={error ? "error" : "muted"}>{error || "loading…"}</p>;
}

// --- topics --------------------------------------------------------------------------------------

function Topics() {
  const [data, error] = useStream("/api/stream/topics");
  const [showInternal, setShowInternal] = useState(false);
  if (!data) return <Loading error={error} />;
  const topics = data.topics.filter((t) => showInternal || !t.internal);
  return (
    <section>
      <h2>Topics <label class="small"><input type="checkbox" checked={showInternal} onChange={(e) => setShowInternal(e.target.checked)} /> internal topics</label></h2>
      {topics.length === 0 && <p class="muted">no topics yet</p>}
      {topics.map((t) => (
        <div class="card" data-testid="topic" data-topic={t.name} key={t.name}>
          <h3>{t.name} {t.internal && <span class="tag">internal</span>} <span class="muted small">{t.topic_id}</span></h3>
          <table>
            <thead><tr><th>partition</th><th>log start</th><th>last stable</th><th>high watermark</th><th>size</th><th>segments</th></tr></thead>
            <tbody>
              {t.partitions.map((p) => (
                <tr key={p.partition}>
                  <td><a href={`#/partition/${enc(t.name)}/${p.partition}`}>{t.name}-{p.partition}</a></td>
                  <td>{p.log_start_offset}</td>
                  <td class={p.last_stable_offset < p.high_watermark ? "held" : ""}>{p.last_stable_offset}</td>
                  <td>{p.high_watermark}</td>
                  <td>{fmtBytes(p.size_bytes)}</td>
                  <td>{p.segments.length}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <details>
            <summary>configs{Object.keys(t.overrides).length ? ` (${Object.keys(t.overrides).length} set on the topic)` : ""}</summary>
            <table class="configs">
              <tbody>
                {Object.entries(t.configs).map(([k, v]) => (
                  <tr key={k} class={k in t.overrides ? "override" : ""}><td>{k}</td><td>{v}</td></tr>
                ))}
              </tbody>
            </table>
          </details>
        </div>
      ))}
    </section>
  );
}

// --- a partition's timeline ----------------------------------------------------------------------

function Marker({ kind, label }) {
  return <div class={`marker marker-${kind}`} data-testid={`${kind}-marker`}><span>{label}</span></div>;
}

function Timeline({ data, selected, onSelect }) {
  const items = [];
  const lso = data.last_stable_offset;
  const hw = data.high_watermark;
  let lsoDrawn = lso >= hw;
  for (const b of data.batches) {
    if (!lsoDrawn && b.base_offset >= lso) {
      items.push(<Marker kind="lso" label={`LSO ${lso}`} key="lso" />);
      lsoDrawn = true;
    }
    const width = Math.min(160, 22 + 6 * Math.log2(1 + b.record_count) * 3);
    items.push(
      <button key={b.base_offset} class={`batch kind-${b.kind} ${selected === b.base_offset ? "selected" : ""}`}
        style={{ width: `${width}px` }} data-testid="batch" data-kind={b.kind} data-offset={b.base_offset}
        title={`${KINDS[b.kind]}: offsets ${b.base_offset}–${b.last_offset}, ${b.record_count} record(s)` +
          (b.producer_id >= 0 ? `, producer ${b.producer_id} epoch ${b.producer_epoch}` : "") +
          (b.transactional_id ? `, ${b.transactional_id}` : "")}
        onClick={() => onSelect(b.base_offset)}>
        <span class="off">{b.base_offset === b.last_offset ? b.base_offset : `${b.base_offset}–${b.last_offset}`}</span>
      </button>
    );
  }
  items.push(lso >= hw
    ? <Marker kind="lso" label={`LSO = HW ${hw}`} key="lso-hw" />
    : <Marker kind="hw" label={`HW ${hw}`} key="hw" />);
  return <div class="timeline" data-testid="timeline">{items}</div>;
}

function BytesView({ view, mode }) {
  if (view == null) return <span class="muted">null</span>;
  let shown = view.hex, as = "hex";
  if (mode !== "hex" && view.json != null && mode !== "text") { shown = view.json; as = "json"; }
  else if (mode !== "hex" && view.text != null) { shown = view.text; as = "text"; }
  return <pre class={`bytes as-${as}`} data-as={as}>{shown}{view.cut ? "…" : ""}</pre>;
}

function Records({ topic, partition, offset }) {
  const [data, setData] = useState(null);
  const [mode, setMode] = useState("auto");
  useEffect(() => {
    setData(null);
    fetch(`/api/records/${enc(topic)}/${partition}/${offset}`).then((r) => r.json()).then(setData, (e) => setData({ error: String(e) }));
  }, [topic, partition, offset]);
  if (!data) return <Loading />;
  if (data.error) return <Loading error={data.error} />;
  return (
    <div class="card" data-testid="records">
      <h3>Batch {data.base_offset}–{data.last_offset} ({data.record_count} record{data.record_count === 1 ? "" : "s"}{data.control ? ", control" : ""})
        <span class="modes">{["auto", "text", "hex"].map((m) => (
          <label key={m}><input type="radio" name="mode" checked={mode === m} onChange={() => setMode(m)} /> {m === "auto" ? "text / JSON" : m}</label>
        ))}</span>
      </h3>
      <table>
        <thead><tr><th>offset</th><th>timestamp</th><th>key</th><th>value</th><th>headers</th></tr></thead>
        <tbody>
          {data.records.map((r) => (
            <tr key={r.offset} data-testid="record">
              <td>{r.offset}</td>
              <td class="nowrap">{fmtTime(r.timestamp)}</td>
              <td><BytesView view={r.key} mode={mode} /></td>
              <td>{r.value_schema && mode === "auto" && r.value_schema.json != null
                ? <div data-testid="value-schema"><span class="muted small">schema id {r.value_schema.schema_id} ({r.value_schema.schema_type})</span>
                  <pre class="bytes as-json">{r.value_schema.json}</pre></div>
                : <BytesView view={r.value} mode={mode} />}
                {r.value_schema && r.value_schema.error && <span class="muted small">schema id {r.value_schema.schema_id}: {r.value_schema.error}</span>}</td>
              <td>{r.headers.map((h) => <div key={h.key}><b>{h.key}</b>: <BytesView view={h.value} mode={mode} /></div>)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Paging({ data, from, setFrom }) {
  const b = data.batches;
  if (!data.truncated && from == null) return null;
  const first = b.length ? b[0].base_offset : data.log_start_offset;
  const span = b.length ? b[b.length - 1].last_offset - first + 1 : 1;
  const later = b.length ? b[b.length - 1].last_offset + 1 : data.high_watermark;
  const link = (label, value, testid) => (
    <a href="javascript:void 0" data-testid={testid} onClick={(e) => { e.preventDefault(); setFrom(value); }}>{label}</a>
  );
  return (
    <p class="paging small">
      showing offsets {first}–{first + span - 1} ({b.length} batches){" "}
      {first > data.log_start_offset && link("earliest", data.log_start_offset, "page-earliest")}{" "}
      {first > data.log_start_offset && link("earlier", Math.max(data.log_start_offset, first - span), "page-earlier")}{" "}
      {from != null && later < data.high_watermark && link("later", later, "page-later")}{" "}
      {from != null && link("newest (live)", null, "page-newest")}
    </p>
  );
}

function Partition({ topic, partition }) {
  const [from, setFrom] = useState(null);
  const [data, error] = useStream(`/api/stream/partition?topic=${enc(topic)}&partition=${partition}` + (from == null ? "" : `&from=${from}`));
  const [selected, setSelected] = useState(null);
  const now = useNow();
  if (!data) return <Loading error={error} />;
  const holder = data.lso_held_by;
  return (
    <section>
      <h2>{topic}-{partition}</h2>
      <div class="stats">
        <div><b>log start</b> {data.log_start_offset}</div>
        <div><b>last stable offset</b> <span data-testid="lso">{data.last_stable_offset}</span></div>
        <div><b>high watermark</b> <span data-testid="hw">{data.high_watermark}</span></div>
        <div><b>size</b> {fmtBytes(data.size_bytes)} in{" "}
          <details class="segments"><summary>{data.segments.length} segment{data.segments.length === 1 ? "" : "s"}</summary>
            <table><thead><tr><th>base offset</th><th>next offset</th><th>size</th></tr></thead><tbody>
              {data.segments.map((sg) => <tr key={sg.base_offset}><td>{sg.base_offset}</td><td>{sg.next_offset}</td><td>{fmtBytes(sg.size_bytes)}</td></tr>)}
            </tbody></table>
          </details>
        </div>
      </div>
      {holder && (
        <p class="holder" data-testid="lso-holder">
          The LSO is held at {holder.first_offset} by the open transaction <b data-testid="lso-holder-id">{holder.transactional_id || "(unknown transactional id)"}</b>
          {" "}(producer {holder.producer_id}{holder.state ? `, ${holder.state}` : ""}
          {holder.start_ms > 0 ? `, open for ${fmtAge(now - holder.start_ms)} of its ${fmtAge(holder.timeout_ms)} timeout` : ""}).
        </p>
      )}
      <div class="legend">{Object.entries(KINDS).filter(([k]) => k !== "control").map(([k, v]) => (
        <span key={k}><i class={`swatch kind-${k}`} /> {v}</span>
      ))}</div>
      <Paging data={data} from={from} setFrom={setFrom} />
      <Timeline data={data} selected={selected} onSelect={setSelected} />
      {selected != null && <Records topic={topic} partition={partition} offset={selected} />}
      <h3>Producers</h3>
      <table data-testid="producers">
        <thead><tr><th>producer id</th><th>epoch</th><th>transactional id</th><th>last sequence</th><th>last timestamp</th><th>coordinator epoch</th><th>open transaction from</th></tr></thead>
        <tbody>
          {data.producers.map((p) => (
            <tr key={p.producer_id}>
              <td>{p.producer_id}</td><td>{p.producer_epoch}</td><td>{p.transactional_id || "–"}</td>
              <td>{p.last_sequence}</td><td class="nowrap">{fmtTime(p.last_timestamp)}</td><td>{p.coordinator_epoch}</td>
              <td>{p.current_txn_start_offset >= 0 ? p.current_txn_start_offset : "–"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

// --- transactions --------------------------------------------------------------------------------

function Transactions() {
  const [data, error] = useStream("/api/stream/transactions");
  const now = useNow();
  if (!data) return <Loading error={error} />;
  return (
    <section>
      <h2>Transactions</h2>
      {data.transactions.length === 0 && <p class="muted">no transactional producers yet</p>}
      <table>
        <thead><tr><th>transactional id</th><th>state</th><th>producer id / epoch</th><th>partitions</th><th>started</th><th>age / timeout</th><th>recent transactions</th></tr></thead>
        <tbody>
          {data.transactions.map((t) => {
            const age = t.open && t.start_ms > 0 ? now - t.start_ms : null;
            const frac = age == null ? 0 : Math.min(1, age / t.timeout_ms);
            return (
              <tr key={t.transactional_id} data-testid="transaction" data-id={t.transactional_id} data-state={t.state}>
                <td><b>{t.transactional_id}</b></td>
                <td><span class={`state state-${t.state}`}>{t.state}</span>{t.pending_state && <span class="muted small"> → {t.pending_state}</span>}</td>
                <td>{t.producer_id} / {t.producer_epoch}</td>
                <td>{tpLinks(t.partitions)}</td>
                <td class="nowrap">{t.open ? fmtTime(t.start_ms) : "–"}</td>
                <td>{age == null ? `– / ${fmtAge(t.timeout_ms)}` : (
                  <div class="age"><div class="bar" style={{ width: `${frac * 100}%` }} /><span>{fmtAge(age)} / {fmtAge(t.timeout_ms)}</span></div>
                )}</td>
                <td class="history">{t.history.map((h, i) => (
                  <span key={i} class={`outcome outcome-${h.outcome}`} title={`${h.outcome} at ${fmtTime(h.end_ms)}: ${h.partitions.join(", ")} (epoch ${h.producer_epoch}, ${fmtAge(h.end_ms - h.start_ms)})`}>{h.outcome}</span>
                ))}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}

// --- groups --------------------------------------------------------------------------------------

function Groups() {
  const [data, error] = useStream("/api/stream/groups");
  if (!data) return <Loading error={error} />;
  return (
    <section>
      <h2>Groups</h2>
      {data.groups.length === 0 && <p class="muted">no groups yet</p>}
      {data.groups.map((g) => (
        <div class="card" key={g.group_id} data-testid="group" data-id={g.group_id}>
          <h3>{g.group_id} <span class="tag" data-testid="group-type">{{ consumer: "consumer (KIP-848)", classic: "classic", none: "offsets only", share: "share (KIP-932)", streams: "streams (KIP-1071)" }[g.type]}</span>
            {" "}<span class={`state state-${g.state}`} data-testid="group-state">{g.state}</span>
            {g.generation != null && <span class="muted small"> {g.type === "classic" ? "generation" : "group epoch"} {g.generation}</span>}
            {g.protocol && <span class="muted small"> protocol {g.protocol}</span>}
            {g.assignor && <span class="muted small"> assignor {g.assignor}</span>}
          </h3>
          {g.type === "share" && <ShareGroup g={g} />}
          {g.type === "streams" && <StreamsGroup g={g} />}
          {g.members.length > 0 && g.type !== "share" && g.type !== "streams" && (
            <table>
              <thead><tr><th>member</th><th>client</th><th>host</th>{g.type === "consumer" && <th>member epoch</th>}<th>assignment</th></tr></thead>
              <tbody>
                {g.members.map((m) => (
                  <tr key={m.member_id}>
                    <td>{m.member_id}{m.member_id === g.leader ? " (leader)" : ""}{m.instance_id ? ` [${m.instance_id}]` : ""}</td>
                    <td>{m.client_id}</td><td>{m.client_host}</td>
                    {g.type === "consumer" && <td>{m.member_epoch}</td>}
                    <td>{tpLinks(m.assignment)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {g.type !== "share" && <table>
            <thead><tr><th>partition</th><th>committed</th><th>high watermark</th><th>last stable</th><th>lag</th><th>pending (transactional)</th></tr></thead>
            <tbody>
              {g.offsets.map((o) => (
                <tr key={`${o.topic}-${o.partition}`} data-testid="group-offset" data-tp={`${o.topic}-${o.partition}`}>
                  <td><TpLink tp={`${o.topic}-${o.partition}`} /></td>
                  <td>{o.committed_offset ?? "–"}</td>
                  <td>{o.high_watermark ?? "–"}</td>
                  <td>{o.last_stable_offset ?? "–"}</td>
                  <td data-testid="lag" class={o.lag ? "held" : ""}>{o.lag ?? "–"}</td>
                  <td>{o.pending_offset != null ? `${o.pending_offset} (producer ${o.pending_producer_id})` : "–"}</td>
                </tr>
              ))}
            </tbody>
          </table>}
        </div>
      ))}
    </section>
  );
}

// a share group (KIP-932): members, and each share-partition's state: in-flight records by state
function ShareGroup({ g }) {
  return (
    <>
      {g.members.length > 0 && (
        <table>
          <thead><tr><th>member</th><th>client</th><th>host</th><th>member epoch</th><th>subscribed</th><th>assignment</th></tr></thead>
          <tbody>
            {g.members.map((m) => (
              <tr key={m.member_id} data-testid="share-member" data-id={m.member_id}>
                <td>{m.member_id}</td><td>{m.client_id}</td><td>{m.client_host}</td><td>{m.member_epoch}</td>
                <td>{m.subscribed.join(", ")}</td>
                <td data-testid="member-assignment">{tpLinks(m.assignment)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <table>
        <thead><tr><th>share-partition</th><th>start offset</th><th>end offset</th><th>high watermark</th><th>lag</th><th>in flight</th></tr></thead>
        <tbody>
          {g.share_partitions.map((p) => (
            <tr key={`${p.topic}-${p.partition}`} data-testid="share-partition" data-tp={`${p.topic}-${p.partition}`}>
              <td><TpLink tp={`${p.topic}-${p.partition}`} /></td>
              <td data-testid="start-offset">{p.start_offset}</td>
              <td>{p.end_offset}</td>
              <td>{p.high_watermark ?? "–"}</td>
              <td data-testid="lag" class={p.lag ? "held" : ""}>{p.lag ?? "–"}</td>
              <td>
                {Object.keys(p.in_flight).length === 0 && <span class="muted">none</span>}
                {Object.entries(p.in_flight).map(([state, runs]) => (
                  <div key={state} data-testid="in-flight" data-state={state}>
                    <span class={`state rec-${state}`}>{state}</span> <span data-testid="in-flight-count">{p.counts[state]}</span>:{" "}
                    {runs.map((r) => (
                      <span key={r.first_offset} class="small run" data-testid="run">
                        {r.first_offset === r.last_offset ? r.first_offset : `${r.first_offset}–${r.last_offset}`}
                        {" "}(delivery {r.delivery_count}{r.member_id ? `, ${r.member_id}, lock ${Math.ceil(r.lock_remaining_ms / 1000)} s` : ""}){" "}
                      </span>
                    ))}
                  </div>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

// a streams group (KIP-1071): topology and its status, members with their processes and tasks
function StreamsGroup({ g }) {
  const t = g.topology;
  return (
    <>
      <p>topology {t ? `epoch ${t.epoch}` : "none yet"}{" "}
        <span class={`state topo-${g.topology_status.code}`} data-testid="topology-status">{g.topology_status.code}</span>
        {g.topology_status.detail && <span class="muted small"> {g.topology_status.detail}</span>}
        <span class="muted small"> assignment epoch {g.assignment_epoch}</span></p>
      {t && (
        <table data-testid="topology">
          <thead><tr><th>subtopology</th><th>source topics</th><th>repartition</th><th>changelogs</th><th>tasks</th></tr></thead>
          <tbody>
            {t.subtopologies.map((s) => (
              <tr key={s.subtopology_id} data-testid="subtopology" data-id={s.subtopology_id}>
                <td>{s.subtopology_id}</td>
                <td>{s.source_topics.join(", ")}</td>
                <td>{s.repartition_source_topics.map((x) => `${x.name} (${x.partitions})`).join(", ")}</td>
                <td>{s.state_changelog_topics.map((x) => `${x.name} (${x.partitions})`).join(", ")}</td>
                <td>{s.tasks ?? "–"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {g.members.length > 0 && (
        <table>
          <thead><tr><th>member</th><th>process</th><th>client</th><th>host</th><th>member epoch</th><th>active</th><th>standby</th><th>warmup</th></tr></thead>
          <tbody>
            {g.members.map((m) => (
              <tr key={m.member_id} data-testid="streams-member" data-id={m.member_id}>
                <td>{m.member_id}{m.instance_id ? ` [${m.instance_id}]` : ""}</td>
                <td data-testid="process-id">{m.process_id}</td>
                <td>{m.client_id}</td><td>{m.client_host}</td><td>{m.member_epoch}</td>
                <td data-testid="active-tasks">{m.active.join(", ")}</td>
                <td data-testid="standby-tasks">{m.standby.join(", ")}</td>
                <td data-testid="warmup-tasks">{m.warmup.join(", ")}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

// --- controls (only with the broker's --controls) ------------------------------------------------

// a field's text as a control argument: JSON when it reads as JSON (3, true, null, [1]), else text
function argument(text) {
  try { return JSON.parse(text); } catch { return text; }
}

function Control({ control }) {
  const [values, setValues] = useState({});
  const [outcome, setOutcome] = useState(null);
  const run = async (e) => {
    e.preventDefault();
    const args = {};
    for (const [k, v] of Object.entries(values)) if (v !== "") args[k] = argument(v);
    setOutcome({ running: true });
    try {
      const r = await fetch(`/api/controls/${enc(control.name)}`, {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(args),
      });
      const j = await r.json();
      setOutcome(r.ok ? { result: j.result } : { error: j.error || `HTTP ${r.status}` });
    } catch (err) {
      setOutcome({ error: String(err) });
    }
  };
  return (
    <form class="card" onSubmit={run} data-testid="control" data-name={control.name}>
      <h3>{control.name}</h3>
      <p class="muted small">{control.doc}</p>
      {Object.entries(control.parameters).map(([p, spec]) => (
        <label key={p}>{p}{spec.required ? " *" : ""}{" "}
          <input name={p} placeholder={spec.required ? "required" : JSON.stringify(spec.default)}
            value={values[p] ?? ""} onInput={(e) => setValues({ ...values, [p]: e.currentTarget.value })} />
        </label>
      ))}
      <button type="submit" disabled={outcome && outcome.running}>run</button>
      {outcome && !outcome.running && (
        <pre data-testid="control-outcome" class={outcome.error ? "held" : ""}>
          {outcome.error ? `error: ${outcome.error}` : JSON.stringify(outcome.result, null, 2)}
        </pre>
      )}
    </form>
  );
}

function Controls({ controls }) {
  return (
    <section>
      <h2>Controls</h2>
      <p class="muted">Test controls of this broker: each runs at once and changes what clients see.</p>
      {controls.map((c) => <Control control={c} key={c.name} />)}
    </section>
  );
}

// --- schemas (the schema registry, with --schema-registry) ----------------------------------------

function Schemas() {
  const [data, setData] = useState(null);
  const [shown, setShown] = useState(null); // "subject/version" whose schema text is open
  useEffect(() => {
    let live = true;
    const load = () => fetch("/api/schemas").then((r) => r.json()).then((j) => live && setData(j), () => {});
    load();
    const timer = setInterval(load, 2000); // registrations are rare: a look every 2 s while open
    return () => { live = false; clearInterval(timer); };
  }, []);
  if (!data) return <Loading />;
  return (
    <section>
      <h2>Schemas</h2>
      <p class="muted">global compatibility {data.compatibility}, mode {data.mode}</p>
      {data.subjects.length === 0 && <p class="muted">no subjects yet</p>}
      <table>
        <thead><tr><th>subject</th><th>compatibility</th><th>mode</th><th>versions (id, type)</th></tr></thead>
        <tbody>
          {data.subjects.map((s) => (
            <Fragment key={s.subject}>
              <tr data-testid="subject" data-subject={s.subject} class={s.deleted ? "muted" : ""}>
                <td><b>{s.subject}</b>{s.deleted && " (deleted)"}</td>
                <td>{s.compatibility}</td>
                <td>{s.mode}</td>
                <td>{s.versions.map((v) => {
                  const key = `${s.subject}/${v.version}`;
                  return (
                    <button key={v.version} class={shown === key ? "active" : ""} title={v.deleted ? "soft-deleted" : ""}
                      onClick={() => setShown(shown === key ? null : key)}>
                      v{v.version} (id {v.id}, {v.schema_type}){v.deleted ? " deleted" : ""}
                    </button>
                  );
                })}</td>
              </tr>
              {s.versions.filter((v) => shown === `${s.subject}/${v.version}`).map((v) => (
                <tr key="schema"><td colSpan={4}><pre class="bytes" data-testid="schema-text">{pretty(v.schema)}</pre>
                  {v.references.length > 0 && <p class="small">references: {v.references.map((r) => `${r.name} → ${r.subject} v${r.version}`).join(", ")}</p>}
                </td></tr>
              ))}
            </Fragment>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function pretty(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
}

// --- the frame -----------------------------------------------------------------------------------

function App() {
  const hash = useHash();
  const parts = hash.slice(2).split("/").map(decodeURIComponent);
  const [controls, setControls] = useState(null);
  const [registry, setRegistry] = useState(false);
  useEffect(() => {
    fetch("/api/controls").then((r) => r.json()).then((j) => setControls(j.enabled ? j.controls : null), () => {});
    fetch("/api/schemas").then((r) => r.json()).then((j) => setRegistry(j.enabled), () => {});
  }, []);
  let page;
  if (parts[0] === "partition" && parts.length >= 3) page = <Partition topic={parts[1]} partition={Number(parts[2])} key={hash} />;
  else if (parts[0] === "transactions") page = <Transactions />;
  else if (parts[0] === "groups") page = <Groups />;
  else if (parts[0] === "controls" && controls) page = <Controls controls={controls} />;
  else if (parts[0] === "schemas" && registry) page = <Schemas />;
  else page = <Topics />;
  const nav = (name, label) => <a href={`#/${name}`} class={parts[0] === name || (name === "topics" && parts[0] === "partition") ? "active" : ""}>{label}</a>;
  return (
    <>
      <header>
        <h1>kafkalite</h1>
        <nav>{nav("topics", "Topics")}{nav("transactions", "Transactions")}{nav("groups", "Groups")}
          {registry && nav("schemas", "Schemas")}{controls && nav("controls", "Controls")}</nav>
      </header>
      <main>{page}</main>
    </>
  );
}

render(<App />, document.getElementById("app"));
