/// What Parley's 2xx says of session timers (RFC 4028 section 9) to a request that carries
/// Session-Expires. Parley refreshes no session itself, so it never takes the refresher's part:
///
/// - The caller supports the timer (`Supported: timer`) and refreshes, or leaves the choice: the
///   interval echoed with `refresher=uac` and `Require: timer`. The caller goes on refreshing
///   (re-INVITE or UPDATE, each answered) and the call lives as long as it does.
/// - The caller asks Parley to refresh (`refresher=uas`), or does not support the timer at all (a
///   proxy put Session-Expires in; section 9 would make Parley the refresher): no Session-Expires
///   in the 2xx, which declines the timer for this dialog (section 7.2: "there is no session
///   expiration"). Echoing the interval there would promise refreshes that never come, and the
///   caller (or the proxy) would end the call when the interval ran out: at 15 minutes, for a
///   carrier's usual 1,800 s.
///
/// Echoing the header whole, as Parley did before, broke the second case, and also put
/// `Require: timer` before a caller that had not said it supports the timer (RFC 3261 section 8.2.2.3:
/// a response may require only what the request supported).
package enum SIPSessionTimerAnswer {
    /// The header fields the 2xx to `request` carries; none when it has no Session-Expires (the
    /// parser refuses a message whose Session-Expires cannot be read).
    package static func headers(for request: SIPMessage) -> [SIPHeader] {
        guard let asked = try? request.sessionExpires() else { return [] }
        guard request.supported().contains(where: { $0.lowercased() == "timer" }), asked.refresher != .uas else { return [] }
        return [SIPHeader("Session-Expires", "\(asked.seconds);refresher=uac"), SIPHeader("Require", "timer")]
    }
}
