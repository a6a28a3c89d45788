import Logging
import Session

/// A line of a SIP call's log, with the call's id.
func sipLog(_ call: String, _ message: Logger.Message, _ metadata: [String: String]) {
    var fields: Logger.Metadata = ["call": "\(call)"]
    for (key, value) in metadata { fields[key] = "\(value)" }
    sessionLog.info(message, metadata: fields)
}

extension SIPCall {
    func sipLog(_ message: Logger.Message, _ metadata: [String: String]) { Telephony.sipLog(id, message, metadata) }
}
