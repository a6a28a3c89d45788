import JSON
import Models
import MCP

package extension SessionEngine {
    /// The response being generated: what of it has been said, the calls it has begun, and how
    /// it ended while its last speech goes out.
    struct Response: Sendable, Equatable {
        package let id: String
        package let itemID: String
        package let modalities: OutputModalities
        package let voice: String
        package let outputAudioFormat: RealtimeAudioFormat
        package let maxOutputTokens: Int?
        /// The most text the reply may have: the history's whole text budget, and at most four
        /// bytes a token of `maxOutputTokens` (the usage estimate's rate).
        package let maxTextBytes: Int
        package let inputTokens: Int
        package var text = ""
        package var itemStarted = false
        /// Its first audio has gone to the listener (`SpeechOutputEvent.audible`): from then on it
        /// may have been heard, and a turn that resumes is a barge-in, not a reopening.
        package var audible = false
        /// Where the text item stands in the response's output, once it has begun.
        package var messageOutputIndex = 0
        /// The function calls the model has begun, in the order it began them.
        package var calls: [Call] = []
        package var nextOutputIndex = 0
        /// The functions the model was offered: the client's, and the MCP tools listed by then.
        package var tools: ToolSet?
        /// What each model name of an MCP tool stands for (`MCPToolState.targets`).
        package var mcpTargets: [String: MCPToolState.Target] = [:]
        /// The MCP servers this response offers (its own `tools`, or the session's).
        package var mcpServers: [MCPServerEntry] = []
        /// The model is not asked yet: it waits for a server being listed, or an approved call
        /// being run; `overrides` say how to ask it then.
        package var modelWaits = false
        package var overrides = ResponseOverrides()
        /// A filler said while a client's function runs (`ToolFiller`), not the model's.
        package var isFiller = false
        package let metadata: JSON?
        /// Out of band (`conversation: "none"`): nothing of it joins the conversation.
        package var outOfBand = false
        /// The session's `speed` when it began.
        package var speed = 1.0
        /// Spoken: its end waits for the speech to be sent.
        package var speaks = false
        /// How it ended, held while the last of its speech goes out.
        package var ending: Ending?

        package struct Call: Sendable, Equatable {
            /// The model's index for the call (its events name it by this).
            package let index: Int
            package let itemID: String
            package let outputIndex: Int
            package let callID: String
            package let name: String
            package var arguments = ""
            /// Set for a call of an MCP tool, which the server runs itself.
            package var mcp: MCPCall?
        }

        /// An MCP call, from the model's words to its outcome.
        package struct MCPCall: Sendable, Equatable {
            package let server: MCPServerEntry
            package let tool: String
            /// The call waits for the client's approval: it becomes an `mcp_approval_request`.
            package let asksApproval: Bool
            /// The approval it runs on, for a call the client approved.
            package var approvalRequestID: String?
            package var phase = Phase.written
            package var output: String?
            package var error: MCPError?
            /// Its `response.output_item.done` went out when it settled, before whatever the
            /// response says after it.
            package var itemDone = false

            package enum Phase: Sendable, Equatable {
                /// The model is writing its arguments.
                case written
                case running
                case done
            }
        }

        package struct Ending: Sendable, Equatable {
            package let status: RealtimeResponse.Status
            package let details: RealtimeResponse.StatusDetails?
            package let usage: Usage?
        }

        package init(id: String, itemID: String, modalities: OutputModalities, voice: String, outputAudioFormat: RealtimeAudioFormat, maxOutputTokens: Int?,
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
