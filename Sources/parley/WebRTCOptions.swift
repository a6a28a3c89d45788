import ArgumentParser
import Loop
import WebRTC

/// Where WebRTC calls' media goes: the address the answers name, and the UDP ports the loops bind
/// (docs/operations.md, "WebRTC behind NAT and firewalls").
struct WebRTCOptions: ParsableArguments {
    enum Settings {
        static let publicAddress = Setting.text("--webrtc-public-ip", "PARLEY_WEBRTC_PUBLIC_IP", shown: "the bound address, else the Host the offer was sent to", valueName: "address",
                                                about: "The IP address WebRTC answers name as their candidate: the one browsers reach this server at (behind NAT, the public one)")
        static let host = Setting<String>("--webrtc-host", "PARLEY_WEBRTC_HOST", default: "0.0.0.0", shown: "0.0.0.0", valueName: "address",
                                          about: "The address the loops' WebRTC media ports (UDP) bind to") { text throws(SettingRejection) in
            guard (try? Sys.resolve(host: text, port: 0, passive: true, numericOnly: true))?.first != nil else { throw SettingRejection("is not a numeric IP address") }
            return text
        }
        static let ports = Setting<ClosedRange<Int>?>("--webrtc-ports", "PARLEY_WEBRTC_PORTS", default: nil, shown: "any the kernel gives", valueName: "low-high",
                                                      about: "The UDP ports the loops' media ports take (one a loop and process), for a firewall to open") { text throws(SettingRejection) in
            let bounds = text.split(separator: "-").map { Int($0) }
            guard bounds.count == 2, let low = bounds[0], let high = bounds[1], 1 <= low, low <= high, high <= 65_535 else {
                throw SettingRejection("is not a range of UDP ports such as 40000-40099")
            }
            return low...high
        }
    }

    @Option(Settings.publicAddress) var publicAddress: String?
    @Option(Settings.host) var host: String?
    @Option(Settings.ports) var ports: String?

    func settings() throws -> WebRTCEndpoint.Settings {
        var settings = WebRTCEndpoint.Settings()
        settings.publicAddress = try Settings.publicAddress.read(publicAddress)
        settings.host = try Settings.host.read(host)
        settings.ports = try Settings.ports.read(ports)
        return settings
    }
}
