// Placeholder until the RTP packet lands: SwiftPM needs a source file in each target.
