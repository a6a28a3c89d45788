import Logging

/// The calls' logger. It keeps the label these lines had while calls were part of the session
/// layer (`parley.session`), so that log filters keep working.
let callLog = Logger(label: "parley.session")
