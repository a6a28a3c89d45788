import Logging

/// The models' logger. It keeps the label the session layer's log lines have always had
/// (`parley.session`), so that filters on upstream failures keep working after the move.
let modelLog = Logger(label: "parley.session")
