import JSON
import Models
import MCP

extension SessionEngine {
    /// The response being generated: what of it has been said, the calls it has begun, and how
    /// it ended while its last speech goes out.
    struct Response: Sendable, Equatable {
        let id: String
        let itemID: String
        let modalities: OutputModalities
        let voice: String
        let outputAudioFormat: RealtimeAudioFormat
        let maxOutputTokens: Int?
        /// The most text the reply may have: the history's whole text budget, and at most four
        /// bytes a token of `maxOutputTokens` (the usage estimate's rate).
        let maxTextBytes: Int
        let inputTokens: Int
        var text = ""
        var itemStarted = false
        /// Its first audio has gone to the listener (`SpeechOutputEvent.audible`): from then on it
        /// may have been heard, and a turn that resumes is a barge-in, not a reopening.
        var audible = false
        /// Where the text item stands in the response's output, once it has begun.
        var messageOutputIndex = 0
        /// The function calls the model has begun, in the order it began them.
        var calls: [Call] = []
        var nextOutputIndex = 0
        /// The functions the model was offered: the client's, and the MCP tools listed by then.
        var tools: ToolSet?
        /// What each model name of an MCP tool stands for (`MCPToolState.targets`).
        var mcpTargets: [String: MCPToolState.Target] = [:]
        /// The MCP servers this response offers (its own `tools`, or the session's).
        var mcpServers: [MCPServerEntry] = []
        /// The model is not asked yet: it waits for a server being listed, or an approved call
        /// being run; `overrides` say how to ask it then.
        var modelWaits = false
        var overrides = ResponseOverrides()
        /// A filler said while a client's function runs (`ToolFiller`), not the model's.
        var isFiller = false
        let metadata: JSON?
        /// Out of band (`conversation: "none"`): nothing of it joins the conversation.
        var outOfBand = false
        /// The session's `speed` when it began.
        var speed = 1.0
        /// Spoken: its end waits for the speech to be sent.
        var speaks = false
        /// How it ended, held while the last of its speech goes out.
        var ending: Ending?

        struct Call: Sendable, Equatable {
            /// The model's index for the call (its events name it by this).
            let index: Int
            let itemID: String
            let outputIndex: Int
            let callID: String
            let name: String
            var arguments = ""
            /// Set for a call of an MCP tool, which the server runs itself.
            var mcp: MCPCall?
        }

        /// An MCP call, from the model's words to its outcome.
        struct MCPCall: Sendable, Equatable {
            let server: MCPServerEntry
            let tool: String
            /// The call waits for the client's approval: it becomes an `mcp_approval_request`.
            let asksApproval: Bool
            /// The approval it runs on, for a call the client approved.
            var approvalRequestID: String?
            var phase = Phase.written
            var output: String?
            var error: MCPError?
            /// Its `response.output_item.done` went out when it settled, before whatever the
            /// response says after it.
            var itemDone = false

            enum Phase: Sendable, Equatable {
                /// The model is writing its arguments.
                case written
                case running
                case done
            }
        }

        struct Ending: Sendable, Equatable {
            let status: RealtimeResponse.Status
            let details: RealtimeResponse.StatusDetails?
            let usage: Usage?
        }

        init(id: String, itemID: String, modalities: OutputModalities, voice: String, outputAudioFormat: RealtimeAudioFormat, maxOutputTokens: Int?,
             maxTextBytes: Int, inputTokens: Int, tools: ToolSet?, metadata: JSON?) {
            self.tools = tools
            self.metadata = metadata
            self.id = id
            self.itemID = itemID
            self.modalities = modalities
            self.voice = voice
            self.outputAudioFormat = outputAudioFormat
            self.maxOutputTokens = maxOutputTokens
            self.maxTextBytes = maxOutputTokens.map { min(maxTextBytes, 4 * $0) } ?? maxTextBytes
            self.inputTokens = inputTokens
        }
    }

}
