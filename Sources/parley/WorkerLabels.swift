import Metrics
#if canImport(Glibc)
import Glibc
#endif

/// The supervisor's labels on `parley_workers` and `parley_worker_info`.
enum WorkerState: String, MetricLabel {
    static let labelName = "state"
    case running, configured
}

/// A worker's index (`worker="3"`).
struct WorkerLabel: MetricLabel {
    static let labelName = "worker"
    let labelValue: String
    init(_ index: Int) { labelValue = String(index) }
}

/// A worker's process id (`pid="4711"`).
struct ProcessIDLabel: MetricLabel {
    static let labelName = "pid"
    let labelValue: String
    init(_ pid: pid_t) { labelValue = String(pid) }
}
