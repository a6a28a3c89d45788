"use strict";
const $ = (id) => document.getElementById(id);
const log = $("log"), notice = $("notice"), stateEl = $("state");
// WebRTC where the browser has it (the browser's own echo cancellation, no WebCodecs needed);
// ?transport=ws asks for the WebSocket, which is also where a failed offer falls back to.
let transport = new URLSearchParams(location.search).get("transport") === "ws" || !("RTCPeerConnection" in window) ? "ws" : "webrtc";
let ws = null, wantConnected = false, retry = 0, micStream = null, micContext = null, encoder = null;
let player = null, decoder = null, playhead = 0, sources = [], replyLine = null, userLine = null, ts = 0;
// Resume (docs/protocol.md): the session outlives a dropped socket for `grace_seconds`. The page
// keeps the newest token and the seq of the last event it saw, so a reconnect gets back the same
// conversation and the events it missed instead of starting over.
let resumeToken = null, lastSeq = 0, ackedSeq = 0, graceSeconds = 30, sessionID = "";
let droppedAt = 0, resumeTry = 0, resuming = false, lostWhy = "", restartNow = false;
// The note shown while the agent's reply is paused by the user's speech (parley.response.paused).
let pausedNote = null;
// The WebRTC call: its peer connection, the audio sender the microphone's track goes to, the
// oai-events channel, and where the call is (Location) for the hangup.
let pc = null, sender = null, channel = null, callPath = "", micWanted = false, meterContext = null, meterTimer = 0;

function setState(text, kind) { stateEl.textContent = text; stateEl.className = "state " + (kind || ""); }
function setVia(text) { $("via").textContent = text ? "(" + text + ")" : ""; }
function say(text) { notice.textContent = text; }
function line(cls, who) {
  const div = document.createElement("div");
  div.className = "turn " + cls;
  div.innerHTML = '<span class="who"></span><span class="text"></span>';
  div.querySelector(".who").textContent = who;
  log.appendChild(div);
  log.scrollTop = log.scrollHeight;
  return div.querySelector(".text");
}
function isOpen() { return transport === "webrtc" ? channel !== null && channel.readyState === "open" : ws !== null && ws.readyState === 1; }
function send(event) {
  if (!isOpen()) return;
  if (transport === "webrtc") channel.send(JSON.stringify(event)); else ws.send(JSON.stringify(event));
}

// A key or client secret from the page's fragment (#key=…, which never reaches a server or its
// logs), kept for this tab and taken out of the address bar. URLSearchParams reads "+" as a
// space, and a key may hold a "+".
function pageKey() {
  const given = new URLSearchParams(location.hash.slice(1).replace(/\+/g, "%2B")).get("key");
  if (given) { sessionStorage.setItem("parley-key", given); history.replaceState(null, "", location.pathname + location.search); }
  return sessionStorage.getItem("parley-key");
}
function refused() {
  say("The server refused the session. If it needs a key, open this page as " + location.origin + "/#key=YOUR_KEY (an API key or a client secret).");
}

// Close codes, said for people.
const closeReasons = { 1000: "closed", 1001: "the server is shutting down", 1008: "the connection was too slow or broke the rules",
  1009: "a message was too big", 1011: "the server hit an internal error", 1012: "the server is restarting",
  1013: "the server is busy; try again soon", 1006: "the connection dropped" };

const sessionEnds = [1000, 1002, 1003, 1007, 1008, 1009];

// The server keeps a dropped session's events until they are acknowledged (up to 1 MiB): about
// once a second, the newest seq seen, only when new events came.
setInterval(() => { if (lastSeq > ackedSeq && ws && ws.readyState === 1 && !resuming) { send({ type: "session.ack", seq: lastSeq }); ackedSeq = lastSeq; } }, 1000);

// Forget the old session: the next connect asks for a new (resumable) one.
function startOver(why) {
  resumeToken = null; lastSeq = ackedSeq = 0; droppedAt = 0; resumeTry = 0; resuming = false;
  replyLine = userLine = null;
  lostWhy = why;
}

// MARK: WebRTC

// A call: a client secret (or the page's key), an offer with one audio transceiver and the
// oai-events channel, the answer. The microphone's track joins the sender when it is granted,
// so the call (and typing) works before the user presses Start.
async function call() {
  wantConnected = true;
  setVia("WebRTC");
  setState("connecting…");
  const key = pageKey();
  let credential = key;
  if (!credential) {
    // Developer mode: a server without keys mints a secret for anyone, so no API key is ever
    // put in the offer unless the page was given one.
    let minted;
    try {
      minted = await fetch("/v1/realtime/client_secrets", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    } catch (err) { return fallBack("the server could not be reached: " + err.message); }
    if (minted.status === 401 || minted.status === 403) { wantConnected = false; setState("not connected", "bad"); refused(); return; }
    if (!minted.ok) return fallBack("no client secret: " + minted.status);
    try { credential = (await minted.json()).value; } catch (_) { return fallBack("the client secret did not read"); }
  }
  if (!wantConnected || transport !== "webrtc") return;
  const peer = new RTCPeerConnection();
  pc = peer;
  sender = peer.addTransceiver("audio", { direction: "sendrecv" }).sender;
  if (micStream) sender.replaceTrack(micStream.getAudioTracks()[0]).catch(() => {});
  peer.ontrack = (e) => {
    const remote = $("remote");
    remote.srcObject = e.streams[0] || new MediaStream([e.track]);
    remote.play().catch(() => {});
  };
  const events = peer.createDataChannel("oai-events");
  channel = events;
  let opened = false;
  events.onopen = () => {
    if (peer !== pc) return;
    opened = true;
    setState("connected", "ok"); say(lostWhy); lostWhy = "";
    applySettings();
  };
  events.onmessage = (m) => { if (peer === pc) onEvent(JSON.parse(m.data)); };
  events.onclose = () => { if (peer === pc) dropped("its data channel closed"); };
  peer.onconnectionstatechange = () => {
    if (peer !== pc) return;
    const state = peer.connectionState;
    if (state === "failed" || state === "closed") opened ? dropped("the connection " + state) : fallBack("the connection did not come up");
    else if (state === "disconnected" && opened) setState("interrupted: waiting for the network…", "bad");
    else if (state === "connected" && opened) setState("connected", "ok");
  };
  let answer;
  try {
    await peer.setLocalDescription(await peer.createOffer());
    answer = await fetch("/v1/realtime/calls", { method: "POST", body: peer.localDescription.sdp,
      headers: { "Content-Type": "application/sdp", "Authorization": "Bearer " + credential } });
  } catch (err) {
    if (peer === pc) fallBack("the offer could not be sent: " + err.message);
    return;
  }
  if (peer !== pc) return;
  if (answer.status === 401 || answer.status === 403) { closeCall(); wantConnected = false; setState("not connected", "bad"); refused(); return; }
  if (answer.status !== 201) {
    let why = "";
    try { why = (await answer.json()).error.message; } catch (_) {}
    return fallBack("the offer was refused: " + answer.status + (why ? ", " + why : ""));
  }
  callPath = answer.headers.get("Location") || "";
  try {
    await peer.setRemoteDescription({ type: "answer", sdp: await answer.text() });
  } catch (err) { if (peer === pc) fallBack("the answer did not apply: " + err.message); return; }
  // ICE and DTLS take well under a second on a reachable server; a call still not up after 15 s
  // is one this network will not carry (UDP blocked, an unreachable address).
  setTimeout(() => { if (peer === pc && !opened) fallBack("the call did not connect within 15 s"); }, 15000);
}

// Ends the call from this side: the hangup (with the page's key if it has one; in developer mode
// none is needed, and a secret may have expired since), and the connection closed, whose DTLS
// close_notify ends the call on the server even if the hangup does not arrive.
function closeCall() {
  if (callPath) {
    const key = sessionStorage.getItem("parley-key");
    fetch(callPath + "/hangup", { method: "POST", keepalive: true, headers: key ? { "Authorization": "Bearer " + key } : {} }).catch(() => {});
  }
  const peer = pc;
  pc = sender = channel = null; callPath = "";
  if (peer) peer.close();
  $("remote").srcObject = null;
}

// The call ended without the user asking: the server's session went with it (a WebRTC call
// has no resume token), so the next call is a new conversation.
function dropped(why) {
  closeCall();
  wantConnected = false;
  stopMic();
  replyLine = userLine = null;
  setState("call dropped: WebRTC calls do not resume", "bad");
  say("The call ended (" + why + "). WebRTC calls do not resume: press Start talking for a new conversation.");
  showReport();
}

// The offer failed: the WebSocket instead, for the rest of this page's life.
function fallBack(why) {
  if (transport !== "webrtc") return;
  closeCall();
  const listen = micWanted;
  stopMic();
  transport = "ws";
  lostWhy = "WebRTC did not work here (" + why + "): using the WebSocket instead.";
  say(lostWhy);
  connect();
  if (listen) startMic();
}

// MARK: WebSocket

function connect() {
  wantConnected = true;
  setVia("WebSocket");
  // Browsers send the key as a subprotocol, since they cannot set a WebSocket's headers.
  // Reconnects offer it again.
  const key = pageKey();
  resuming = resumeToken !== null;
  setState(resuming ? "reconnecting…" : "connecting…", resuming ? "bad" : "");
  const query = resuming ? "?resume_token=" + encodeURIComponent(resumeToken) + "&last_seq=" + lastSeq : "?resume=1";
  let sock;
  try {
    sock = new WebSocket(location.origin.replace(/^http/, "ws") + "/ws" + query, key ? ["realtime", "openai-insecure-api-key." + key] : undefined);
  } catch (err) {
    // A subprotocol is an HTTP token: a key with other characters ("/", "=", spaces) cannot be
    // offered at all, and retrying would not change that.
    wantConnected = false;
    setState("not connected", "bad");
    say("This key cannot be sent from a browser (it has characters such as / or = that a WebSocket subprotocol cannot carry): open this page with a client secret, or with a key of letters, digits, - and _.");
    return;
  }
  ws = sock;
  let opened = false;
  sock.binaryType = "arraybuffer";
  // A replaced socket's late events must not touch the current one.
  sock.onopen = () => {
    if (sock !== ws) return;
    opened = true; retry = 0;
    // A resume is not back until session.resumed says so.
    if (!resuming) { setState("connected", "ok"); say(lostWhy); lostWhy = ""; applySettings(); }
  };
  sock.onmessage = (m) => { if (sock === ws) typeof m.data === "string" ? onEvent(JSON.parse(m.data)) : playPacket(m.data); };
  sock.onclose = (e) => {
    if (sock !== ws) return;
    if (!wantConnected) { setState("not connected"); showReport(); return; }
    const why = closeReasons[e.code] || ("closed with code " + e.code);
    // These codes end the session on the server too (a normal close, or one for the client's
    // fault); anything else (1006 for a network error, 1001/1012 from a server going away) leaves
    // it parked there for the grace window.
    if (resumeToken !== null && !sessionEnds.includes(e.code)) {
      if (!droppedAt) { droppedAt = Date.now(); resumeTry = 0; }
      // 0.25 s, 0.5 s, 1 s, … at most 4 s apart, and only while the server still keeps the session.
      const wait = Math.min(4, 0.25 * 2 ** resumeTry++);
      if (Date.now() + wait * 1000 < droppedAt + graceSeconds * 1000) {
        setState("reconnecting…", "bad");
        setTimeout(() => { if (wantConnected && sock === ws) connect(); }, wait * 1000);
        return;
      }
      // Past the grace window the server has let the session go: from here on, as for any new one.
      startOver("The session was lost (no reconnect within " + graceSeconds + " s): this is a new conversation.");
    }
    if (resumeToken !== null) startOver("");
    // A resume the server refused (its error event started over): a new session at once, once.
    if (restartNow) { restartNow = false; setTimeout(() => { if (wantConnected && sock === ws) connect(); }, 250); return; }
    // A refused upgrade (a missing or wrong key) looks like 1006 before any open.
    if (!opened && e.code === 1006 && retry >= 1) refused();
    const wait = Math.min(10, 2 ** retry++);
    setState("disconnected: " + why + "; reconnecting in " + wait + " s", "bad");
    setTimeout(() => { if (wantConnected && sock === ws) connect(); }, wait * 1000);
  };
}

// After a call, where its report is (GET /v1/sessions/{id}, docs/operations.md, "Session reports").
function showReport() {
  if (!sessionID) return;
  const link = $("reportLink");
  link.href = "/v1/sessions/" + encodeURIComponent(sessionID);
  link.textContent = "/v1/sessions/" + sessionID;
  $("report").hidden = false;
}

function onEvent(e) {
  if (typeof e.seq === "number") lastSeq = e.seq;
  switch (e.type) {
    case "session.created":
      sessionID = (e.session && e.session.id) || "";
      $("report").hidden = true;
      break;
    case "session.resume_token":
      // The newest token is the one that works (a draining server sends a fresh one before 1012).
      resumeToken = e.token;
      if (e.grace_seconds) graceSeconds = e.grace_seconds;
      break;
    case "session.resumed":
      // Same conversation: the missed events follow, then live ones; the microphone's packets go
      // to this socket already. The old token is used up.
      resumeToken = e.token; resuming = false; droppedAt = 0; resumeTry = 0;
      setState("connected", "ok");
      say("Reconnected (" + e.replayed + " missed events replayed).");
      applySettings();
      break;
    case "parley.turn.timeline":
      drawTimeline(e.stages_ms || {});
      break;
    case "parley.response.paused":
      // The user spoke over the reply: the server holds its audio until it knows whether this
      // is an interruption or only "uh-huh" (docs/protocol.md, Barge-in).
      pausedNote = line("agent partial", "");
      pausedNote.textContent = "(paused to listen)";
      break;
    case "parley.response.resumed":
      if (pausedNote) {
        pausedNote.textContent = e.reason === "backchannel" ? "(heard a backchannel, went on)" : "(only a short sound, went on)";
      }
      pausedNote = null;
      break;
    case "input_audio_buffer.speech_started":
      if (pausedNote) pausedNote.textContent = "(interrupted)";
      pausedNote = null;
      stopPlayback();  // barge-in: the user is speaking (on a call, the server stops the track)
      userLine = line("user", "You");
      userLine.classList.add("partial");
      userLine.textContent = "…";
      break;
    case "conversation.item.input_audio_transcription.delta":
      if (!userLine) userLine = line("user", "You");
      userLine.textContent = (userLine.textContent === "…" ? "" : userLine.textContent) + e.delta;
      break;
    case "conversation.item.input_audio_transcription.completed":
      if (!userLine) userLine = line("user", "You");
      userLine.textContent = e.transcript || "(not understood)";
      userLine.classList.remove("partial");
      userLine = null;
      break;
    case "response.created": replyLine = null; break;
    case "response.output_text.delta":
    case "response.output_audio_transcript.delta":
      if (!replyLine) replyLine = line("agent", "Parley");
      replyLine.textContent += e.delta;
      log.scrollTop = log.scrollHeight;
      break;
    case "response.done": {
      replyLine = null;
      // MCP tools the server ran (a client secret's session may name servers): the page asks
      // for the reply that reads their output, as the Realtime API leaves that to the client;
      // a call that needs approval is put to the user.
      const output = (e.response && e.response.output) || [];
      for (const item of output) {
        if (item.type === "mcp_call") line("tool", "Tool").textContent = item.server_label + "." + item.name + (item.error ? " failed" : "");
        if (item.type === "mcp_approval_request") {
          const approve = confirm("Let the agent call " + item.server_label + "." + item.name + " with " + item.arguments + "?");
          send({type: "conversation.item.create", item: {type: "mcp_approval_response", approval_request_id: item.id, approve: approve}});
        }
      }
      if (e.response && e.response.status === "completed" && output.some(function (item) { return item.type === "mcp_call"; })) send({type: "response.create"});
      break;
    }
    case "error":
      if (e.error && (e.error.code === "resume_token_invalid" || e.error.code === "resume_out_of_range")) {
        // The server has no such session any more (expired, or too far behind): the close that
        // follows starts a new one.
        startOver("The session could not be resumed (" + e.error.message + "): this is a new conversation.");
        say(lostWhy);
        restartNow = true;
        break;
      }
      say("Server: " + ((e.error && e.error.message) || "error")); break;
  }
}

// The last turn's stages (parley.turn.timeline), one coloured bar each, as wide as its share.
const stageColours = { end_of_turn: "#64748b", transcription: "#2563eb", model_request: "#0891b2", first_token: "#7c3aed",
  first_sentence: "#c026d3", synthesis: "#ea580c", first_frame: "#15803d" };
function drawTimeline(stages) {
  const bar = $("timeline"), total = stages.total || 0;
  bar.replaceChildren();
  const parts = [];
  for (const [name, ms] of Object.entries(stages)) {
    if (name === "total") continue;
    const span = document.createElement("span");
    span.style.flex = String(Math.max(ms, 1));
    span.style.background = stageColours[name] || "#94a3b8";
    span.title = name.replace(/_/g, " ") + ": " + ms + " ms";
    if (ms >= total / 8) span.textContent = ms + " ms";
    bar.append(span);
    parts.push(name.replace(/_/g, " ") + " " + ms);
  }
  $("timelineText").textContent = "Last turn, last word to first sound: " + total + " ms (" + parts.join(", ") + ")";
}

function applySettings() {
  const voice = $("voice").checked;
  send({ type: "session.update", session: { type: "realtime", output_modalities: voice ? ["audio"] : ["text"],
    include: ["parley.turn.timeline"],
    audio: { input: { turn_detection: { type: "server_vad", threshold: 1 - Number($("sensitivity").value) } } } } });
}
$("voice").onchange = applySettings;
$("sensitivity").onchange = applySettings;

// The microphone. On a call: the track itself, with the browser's echo cancellation, noise
// suppression and gain control (what WebRTC is for here), its level read by an AnalyserNode.
// On the WebSocket: 16 kHz mono into an AudioWorklet, 20 ms Opus frames out.
const worklet = `class Tap extends AudioWorkletProcessor {
  process(inputs) { const ch = inputs[0][0]; if (ch) this.port.postMessage(ch.slice(0)); return true; } }
  registerProcessor("tap", Tap);`;

async function startMic() {
  micWanted = true;
  if (transport === "webrtc") return startCallMic();
  if (!("AudioEncoder" in window)) { say("This browser cannot encode Opus (WebCodecs AudioEncoder is missing): use a recent Chrome, Edge or Safari, or type below."); return; }
  micStream = await askMic({ channelCount: 1, echoCancellation: true, noiseSuppression: true });
  if (!micStream) return;
  micContext = new AudioContext({ sampleRate: 16000 });
  await micContext.audioWorklet.addModule(URL.createObjectURL(new Blob([worklet], { type: "text/javascript" })));
  const source = micContext.createMediaStreamSource(micStream);
  const tap = new AudioWorkletNode(micContext, "tap");
  encoder = new AudioEncoder({ output: (chunk) => { const b = new Uint8Array(chunk.byteLength); chunk.copyTo(b); if (ws && ws.readyState === 1) ws.send(b); },
    error: (err) => say("Opus encoder: " + err.message) });
  encoder.configure({ codec: "opus", sampleRate: 16000, numberOfChannels: 1, bitrate: 24000, opus: { frameDuration: 20000, application: "voip" } });
  tap.port.onmessage = (m) => {
    const samples = m.data;
    $("level").value = loudness(samples);
    encoder.encode(new AudioData({ format: "f32", sampleRate: 16000, numberOfFrames: samples.length, numberOfChannels: 1, timestamp: ts, data: samples }));
    ts += samples.length * 1e6 / 16000;
  };
  source.connect(tap);
  $("start").disabled = true; $("stop").disabled = false;
}

async function startCallMic() {
  if (!wantConnected) call();
  $("remote").play().catch(() => {});  // a click lets a page play sound
  const stream = await askMic({ channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true });
  if (!stream) return;
  // Stopped, or fallen back to the WebSocket, while the browser asked.
  if (transport !== "webrtc" || !micWanted) { stream.getTracks().forEach((t) => t.stop()); return; }
  micStream = stream;
  if (sender) sender.replaceTrack(micStream.getAudioTracks()[0]).catch(() => {});
  meterContext = new AudioContext();
  const analyser = meterContext.createAnalyser();
  analyser.fftSize = 2048;
  meterContext.createMediaStreamSource(micStream).connect(analyser);
  const samples = new Float32Array(analyser.fftSize);
  meterTimer = setInterval(() => { analyser.getFloatTimeDomainData(samples); $("level").value = loudness(samples); }, 100);
  $("start").disabled = true; $("stop").disabled = false;
}

async function askMic(constraints) {
  try {
    return await navigator.mediaDevices.getUserMedia({ audio: constraints });
  } catch (err) {
    micWanted = false;
    say(err.name === "NotAllowedError" ? "The microphone was denied: allow it in the browser's site settings, or type below." : "No microphone: " + err.message);
    return null;
  }
}

function loudness(samples) {
  let sum = 0; for (const s of samples) sum += s * s;
  return Math.min(1, Math.sqrt(sum / samples.length) * 4);
}

function stopMic() {
  micWanted = false;
  if (micStream) micStream.getTracks().forEach((t) => t.stop());
  if (micContext) micContext.close();
  if (meterContext) meterContext.close();
  if (encoder && encoder.state !== "closed") encoder.close();
  if (sender) sender.replaceTrack(null).catch(() => {});
  clearInterval(meterTimer);
  micStream = micContext = meterContext = encoder = null;
  $("level").value = 0;
  $("start").disabled = false; $("stop").disabled = true;
}

// The spoken reply on the WebSocket: Opus packets (24 kHz mono) decoded and queued back to back.
// (On a call the browser plays the audio track itself.)
function playPacket(data) {
  if (!("AudioDecoder" in window)) return;
  if (!player) { player = new AudioContext(); }
  if (!decoder || decoder.state === "closed") {
    decoder = new AudioDecoder({ output: schedule, error: (err) => say("Opus decoder: " + err.message) });
    decoder.configure({ codec: "opus", sampleRate: 24000, numberOfChannels: 1 });
  }
  decoder.decode(new EncodedAudioChunk({ type: "key", timestamp: 0, data }));
}
function schedule(audio) {
  const buffer = player.createBuffer(1, audio.numberOfFrames, audio.sampleRate);
  audio.copyTo(buffer.getChannelData(0), { planeIndex: 0, format: "f32-planar" });
  audio.close();
  const node = player.createBufferSource();
  node.buffer = buffer;
  node.connect(player.destination);
  playhead = Math.max(playhead, player.currentTime + 0.05);
  node.start(playhead);
  playhead += buffer.duration;
  sources.push(node);
  node.onended = () => { sources = sources.filter((s) => s !== node); };
}
function stopPlayback() {
  for (const s of sources) { try { s.stop(); } catch (_) {} }
  sources = []; playhead = 0;
}

$("start").onclick = async () => { if (transport === "ws" && (!ws || ws.readyState > 1)) connect(); await startMic(); };
// Stop: on a call, the call ends (a new one on Start); on the WebSocket, the microphone stops and
// the session stays, for typing.
$("stop").onclick = () => {
  stopMic();
  if (transport !== "webrtc") return;
  wantConnected = false;
  closeCall();
  setState("not connected");
  showReport();
};
window.addEventListener("pagehide", () => { if (pc) closeCall(); });
$("textForm").onsubmit = (e) => {
  e.preventDefault();
  const text = $("text").value.trim();
  if (!text) return;
  if (!isOpen()) {
    say("Not connected yet.");
    if (transport === "ws" && !ws) connect(); else if (transport === "webrtc" && !wantConnected) call();
    return;
  }
  stopPlayback();
  line("user", "You").textContent = text;
  send({ type: "conversation.item.create", item: { type: "message", role: "user", content: [{ type: "input_text", text }] } });
  send({ type: "response.create" });
  $("text").value = "";
};
if (transport === "webrtc") call(); else if (!("WebSocket" in window)) say("This browser has no WebSocket."); else connect();
if (new URLSearchParams(location.search).get("autostart") === "1") startMic();
