/// What a microphone without an echo canceller sends for the `samples` of `tick` (counted from 1):
/// what its loudspeaker `played`, `delay` samples later at `leak`, the speaker's own words from
/// sample `userStart` on, and the room's `noise` (looped). The echo tests of /ws, SIP and /twilio
/// share it.
public enum EchoingMicrophone {
    public static func frame(tick: Int, samples: Int = 160, played: [Int16], leak: Double, delay: Int, user: [Int16], userStart: Int?,
                             noise: [Int16]) -> [Int16] {
        let from = (tick - 1) * samples
        return (0..<samples).map { i -> Int16 in
            let t = from + i
            let echo = t >= delay && t - delay < played.count ? Double(played[t - delay]) * leak : 0
            let said = userStart.map { t >= $0 && t - $0 < user.count ? Double(user[t - $0]) : 0 } ?? 0
            return Int16(clamping: Int(echo + said + Double(noise[t % noise.count])))
        }
    }
}
