/// The page's style sheet (served as `/app.css`): one column on a phone, two on a tablet;
/// every control at least 44 px high.
enum WebPageStyle {
  static let text = """
    :root { --bg: #121417; --card: #1d2126; --fg: #e8eaed; --dim: #9aa0a6; --accent: #4fc3f7;
      --ok: #2e7d32; --warn: #f9a825; --bad: #c62828; }
    * { box-sizing: border-box; }
    body { font: 16px/1.4 system-ui, sans-serif; margin: 0; background: var(--bg); color: var(--fg); }
    main { display: grid; gap: 12px; padding: 12px; grid-template-columns: 1fr; }
    @media (min-width: 800px) { main { grid-template-columns: 1fr 1fr; }
      .stages-card { grid-column: 1 / -1; } }
    .banner { position: sticky; top: 0; z-index: 2; display: flex; justify-content: space-between;
      align-items: center; gap: 8px; padding: 10px 14px; font-weight: 700; font-size: 18px;
      background: var(--ok); min-height: 48px; }
    .banner[data-state="muted"], .banner[data-state="suspended"] { background: var(--bad); }
    .banner[data-state="reconnecting"], .banner[data-state="stopping"], .banner[data-state="connecting"] {
      background: var(--warn); color: #000; }
    .banner[data-state="lost"] { background: #555; }
    .banner[data-state="bypassed"] { background: #6a1b9a; }
    .preset-name { font-weight: 400; font-size: 15px; opacity: .9; }
    .card { background: var(--card); border-radius: 10px; padding: 12px; min-width: 0; }
    h2 { margin: 0 0 8px; font-size: 15px; text-transform: uppercase; letter-spacing: .06em; color: var(--dim); }
    button, select, input[type=number] { font: inherit; min-height: 44px; padding: 8px 14px; border-radius: 8px;
      border: 1px solid #3c4148; background: #2a2f36; color: var(--fg); }
    button { cursor: pointer; touch-action: manipulation; }
    button:active { filter: brightness(1.3); }
    .mute-card { display: grid; gap: 10px; }
    .mute { min-height: 96px; font-size: 32px; font-weight: 800; letter-spacing: .1em; background: #37474f; }
    .mute.muted { background: var(--bad); }
    .mode { color: var(--dim); display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
    .row { display: flex; gap: 8px; flex-wrap: wrap; }
    .row select { flex: 1 1 160px; min-width: 0; }
    .controls { display: grid; gap: 6px; }
    .control { display: grid; grid-template-columns: minmax(90px, 34%) 1fr 74px; gap: 8px; align-items: center;
      min-height: 44px; }
    .control label { overflow-wrap: anywhere; font-size: 14px; }
    .control output, .control .value { font-variant-numeric: tabular-nums; text-align: right; font-size: 14px; }
    input[type=range] { width: 100%; min-height: 44px; accent-color: var(--accent); margin: 0; }
    .toggle.on { background: var(--accent); color: #000; }
    details.stage { border-top: 1px solid #2c3138; padding: 4px 0; }
    details.stage summary { display: flex; align-items: center; justify-content: space-between; gap: 8px;
      min-height: 48px; cursor: pointer; font-weight: 600; }
    details.stage summary .bypass.on { background: #6a1b9a; }
    .meters { display: grid; gap: 6px; }
    .meter { display: grid; grid-template-columns: 64px 1fr 84px; gap: 8px; align-items: center; font-size: 13px; }
    .bar { position: relative; height: 18px; background: #0b0d0f; border-radius: 4px; overflow: hidden; }
    .bar .rms { position: absolute; left: 0; top: 0; bottom: 0; background: linear-gradient(90deg, #2e7d32, #9ccc65 70%, #f9a825 90%, #c62828); }
    .bar .peak { position: absolute; top: 0; bottom: 0; width: 3px; background: #fff; }
    .reductions { display: grid; gap: 4px; margin-top: 8px; }
    .gr .bar .rms { background: #ef6c00; }
    .figures { color: var(--dim); font-size: 14px; font-variant-numeric: tabular-nums; margin: 8px 0 0; }
    .list { margin: 8px 0 0; padding-left: 18px; font-size: 14px; overflow-wrap: anywhere; }
    body.login main { display: block; max-width: 420px; margin: 10vh auto; }
    body.login input { font: inherit; min-height: 44px; width: 100%; margin: 8px 0; padding: 8px; }

    """
}
